package httplimit_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

func TestABusyGroupGets429AndABusyServer503WithRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		policy     *groupconc.PolicyBuilder
		second     string // the path of the request turned away
		retryAfter time.Duration
		code       int
		header     string
	}{
		{"group queue full", groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0), "/a", 3 * time.Second, 429, "3"},
		{"global queue full", groupconc.NewPolicyBuilder().GlobalMaxInFlight(1).GlobalQueueThreshold(0), "/b", 0, 503, "1"},
		{"rounded up", groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0), "/a", 1500 * time.Millisecond, 429, "2"},
		{"no header", groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0), "/a", -1, 429, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newExecutor(t, tc.policy, nil)
			g := newGate()
			srv := serve(t, httplimit.Handler(e, g, httplimit.ServerOptions{RetryAfter: tc.retryAfter}))
			first := goGet(t.Context(), srv.Client(), srv.URL+"/a?id=first")
			g.waitEntered(t)

			got := get(t.Context(), srv.Client(), srv.URL+tc.second+"?id=second")
			require.NoError(t, got.err)
			assert.Equal(t, tc.code, got.code)
			assert.Equal(t, tc.header, got.retryAfter, "Retry-After")
			assert.Equal(t, http.StatusText(tc.code)+"\n", got.body)

			g.open(t)
			assert.Equal(t, 200, recv(t, first).code)
			assert.EqualValues(t, 1, g.max.Load(), "the turned-away request never ran")
		})
	}
}

func TestAnErrorHandlerWritesTheResponseOfATurnedAwayRequest(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0), nil)
	g := newGate()
	reasons := make(chan string, 1)
	srv := serve(t, httplimit.Handler(e, g, httplimit.ServerOptions{
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			var re *groupconc.RejectedError
			if !errors.As(err, &re) {
				httplimit.WriteError(w, err, time.Second)
				return
			}
			reasons <- re.Reason
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintf(w, `{"group":%q,"reason":%q}`, re.GroupKey, re.Reason)
		},
	}))
	first := goGet(t.Context(), srv.Client(), srv.URL+"/a")
	g.waitEntered(t)
	got := get(t.Context(), srv.Client(), srv.URL+"/a")
	assert.Equal(t, 429, got.code)
	assert.Equal(t, `{"group":"/a","reason":"group_queue_full"}`, got.body)
	g.open(t)
	recv(t, first)
	assert.Equal(t, groupconc.ReasonGroupQueueFull, <-reasons)
}

func TestTheKeyAndPriorityComeFromTheRequest(t *testing.T) {
	opts := httplimit.ServerOptions{Key: httplimit.HeaderKey("X-Tenant", ""), Priority: headerPriority}
	e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
	srv := serve(t, httplimit.Handler(e, newGate(), opts))
	got := get(t.Context(), srv.Client(), srv.URL+"/x")
	assert.Equal(t, 400, got.code, "no X-Tenant and no fallback")
	assert.Empty(t, got.retryAfter, "a 400 has no Retry-After")

	// The order is checked in a bubble, without a network (see startOrder).
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), nil)
		g := newGate()
		h := httplimit.Handler(e, g, opts)
		codes := make(chan int, 4)
		order := startOrder(t, g, func(id string) {
			go func() {
				r := httptest.NewRequest(http.MethodGet, "/?id="+id, nil)
				r.Header.Set("X-Tenant", "acme")
				r.Header.Set("X-Priority", id)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				codes <- w.Code
			}()
		}, func() {
			st, _ := e.GroupStats("acme")
			assert.Equal(t, 3, st.Waiting)
		})
		assert.Equal(t, []string{"high", "", "low"}, order, "the start order follows X-Priority")
		for range 4 {
			assert.Equal(t, 200, <-codes)
		}
	})
}

func TestTheCostComesFromTheRequest(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(4), nil)
	// groupconc decides which costs it takes: ask it.
	_, costErr := groupconc.Do(t.Context(), e, "probe", func(context.Context) (int, error) { return 0, nil }, groupconc.SubmitOptions{Cost: 2})
	g := newGate()
	srv := serve(t, httplimit.Handler(e, g, httplimit.ServerOptions{
		Cost: func(r *http.Request) int { return len(r.URL.Query().Get("id")) },
	}))
	for _, id := range []string{"a", "bb"} {
		ch := goGet(t.Context(), srv.Client(), srv.URL+"/c?id="+id)
		if id == "bb" && costErr != nil {
			require.ErrorIs(t, costErr, groupconc.ErrInvalidTask)
			assert.Equal(t, 400, recv(t, ch).code, "a cost groupconc refuses is the request's fault")
			continue
		}
		g.waitEntered(t)
		st, _ := e.GroupStats("/c")
		assert.Equal(t, len(id), st.RunningCost, "the permits held for id %q", id)
		g.open(t)
		assert.Equal(t, 200, recv(t, ch).code)
	}
}

func TestABoundedWaitEndsWith429OrWithASlot(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0), nil)
	g := newGate()
	opts := func(d time.Duration) httplimit.ServerOptions {
		return httplimit.ServerOptions{Submit: groupconc.SubmitOptions{Block: true, MaxWait: d}}
	}
	short := serve(t, httplimit.Handler(e, g, opts(20*time.Millisecond)))
	long := serve(t, httplimit.Handler(e, g, opts(time.Minute)))

	first := goGet(t.Context(), short.Client(), short.URL+"/w?id=first")
	g.waitEntered(t)

	got := get(t.Context(), short.Client(), short.URL+"/w?id=late")
	assert.Equal(t, 429, got.code, "MaxWait passed: %s", got.body)
	assert.Equal(t, "1", got.retryAfter)

	second := goGet(t.Context(), long.Client(), long.URL+"/w?id=second")
	eventually(t, "blocked", func() bool { return e.Stats().Blocked == 1 })
	g.open(t)
	assert.Equal(t, "second", g.waitEntered(t), "the slot freed goes to the blocked request")
	g.open(t)
	assert.Equal(t, 200, recv(t, first).code)
	assert.Equal(t, "ok second", recv(t, second).body)
}

func TestAClientThatGoesAwayEndsItsWaitAndTheHandlerNeverRuns(t *testing.T) {
	rec := newRecorder()
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), rec)
	g := newGate()
	srv := serve(t, httplimit.Handler(e, g, httplimit.ServerOptions{}))

	first := goGet(t.Context(), srv.Client(), srv.URL+"/g?id=first")
	g.waitEntered(t)
	rec.waitSubmitted(t, 1)
	ctx, cancel := context.WithCancel(t.Context())
	gone := goGet(ctx, srv.Client(), srv.URL+"/g?id=gone")
	rec.waitSubmitted(t, 1)
	cancel()
	assert.ErrorIs(t, recv(t, gone).err, context.Canceled)

	res := rec.waitCompleted(t)
	assert.Equal(t, groupconc.StatusCancelled, res.Status, "the waiting request's task")
	g.open(t)
	assert.Equal(t, 200, recv(t, first).code)
	assert.Equal(t, groupconc.StatusSuccess, rec.waitCompleted(t).Status)
	assert.Len(t, g.entered, 0, "the handler never ran for the request that went away")
	assert.EqualValues(t, 1, g.max.Load())
}

func TestAPanickingHandlerKeepsNetHTTPsBehaviour(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), nil)
	panics := make(chan any, 2)
	limited := httplimit.Handler(e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/boom":
			panic("boom")
		case "/abort":
			w.Write([]byte("half"))
			panic(http.ErrAbortHandler)
		}
		fmt.Fprint(w, "fine")
	}), httplimit.ServerOptions{Key: func(*http.Request) string { return "one" }})
	// outer sees what reaches net/http, and passes it on unchanged.
	outer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				panics <- v
				panic(v)
			}
		}()
		limited.ServeHTTP(w, r)
	})
	var logs syncBuffer
	srv := httptest.NewUnstartedServer(outer)
	srv.Config.ErrorLog = log.New(&logs, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)
	// No keep-alive: a GET that fails on a reused connection is sent again.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

	assert.Error(t, get(t.Context(), c, srv.URL+"/boom").err, "the response is aborted")
	assert.Equal(t, "boom", <-panics)
	assert.Error(t, get(t.Context(), c, srv.URL+"/abort").err)
	assert.Same(t, http.ErrAbortHandler, (<-panics).(error))

	got := get(t.Context(), c, srv.URL+"/fine")
	assert.Equal(t, "fine", got.body, "the server keeps serving, and the group's permit is back")
	assert.Equal(t, 1, strings.Count(logs.String(), "panic serving"), "net/http logs the panic, not ErrAbortHandler: %s", logs.String())
	assert.Contains(t, logs.String(), "boom")
	// The handler's frame, where it panicked, is on the stack net/http logs.
	assert.Contains(t, logs.String(), "TestAPanickingHandlerKeepsNetHTTPsBehaviour.func1(", "the handler's frame")
	st := e.Stats()
	assert.Equal(t, 0, st.Running)
	assert.EqualValues(t, 2, st.Failed, "a panic counts as a failed task")
}

func TestTheHandlerRunsWithTheRequestsContextAsATask(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), nil)
	type key struct{}
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A Do of the same group would wait for the permit this request
		// holds. Inside the request it runs at once under it.
		v, err := groupconc.Do(r.Context(), e, "/ctx", func(ctx context.Context) (string, error) {
			return ctx.Value(key{}).(string), nil
		}, groupconc.SubmitOptions{})
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		fmt.Fprint(w, v)
	})
	limited := httplimit.Handler(e, inner, httplimit.ServerOptions{})
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limited.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), key{}, "from outside")))
	}))
	got := get(t.Context(), srv.Client(), srv.URL+"/ctx")
	assert.Equal(t, 200, got.code)
	assert.Equal(t, "from outside", got.body)
}

func TestAClosedExecutorAnswers503(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
	srv := serve(t, httplimit.Handler(e, newGate(), httplimit.ServerOptions{}))
	e.Close()
	got := get(t.Context(), srv.Client(), srv.URL+"/")
	assert.Equal(t, 503, got.code)
	assert.Equal(t, "1", got.retryAfter)
}

func TestARejectionHandlersHandlerServesInPlaceOfTheTurnedAwayRequest(t *testing.T) {
	stale := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "stale copy") })
	b := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).
		RejectionHandler(func(ctx context.Context, r *groupconc.Rejection) (any, error) {
			if r.GroupKey == "/none" {
				return nil, nil
			}
			return http.Handler(stale), nil
		})
	e := newExecutor(t, b, nil)
	g := newGate()
	srv := serve(t, httplimit.Handler(e, g, httplimit.ServerOptions{}))
	for _, path := range []string{"/r", "/none"} {
		first := goGet(t.Context(), srv.Client(), srv.URL+path)
		g.waitEntered(t)
		got := get(t.Context(), srv.Client(), srv.URL+path)
		if path == "/r" {
			assert.Equal(t, "stale copy", got.body)
		} else {
			assert.Equal(t, 503, got.code, "a handler that gives no http.Handler: nothing to serve")
		}
		g.open(t)
		recv(t, first)
	}
}

func TestStatusCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
	}{
		{&groupconc.RejectedError{Reason: groupconc.ReasonGroupQueueFull}, 429},
		{&groupconc.RejectedError{Reason: groupconc.ReasonWaitTimeout}, 429},
		{&groupconc.RejectedError{Reason: groupconc.ReasonDisplaced}, 429},
		{fmt.Errorf("wrapped: %w", &groupconc.RejectedError{Reason: groupconc.ReasonGlobalQueueFull}), 503},
		{context.Canceled, 503},
		{context.DeadlineExceeded, 503},
		{groupconc.ErrClosed, 503},
		{groupconc.ErrGroupShutdown, 503},
		{groupconc.ErrGroupEvicted, 503},
		{httplimit.ErrNoKey, 400},
		{groupconc.ErrInvalidTask, 400},
		{groupconc.ErrInvalidPolicy, 500},
		{errors.New("other"), 500},
	} {
		assert.Equal(t, tc.code, httplimit.StatusCode(tc.err), "%v", tc.err)
	}
}
