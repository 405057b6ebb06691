package httplimit_test

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// A request's context kept past the handler (context.WithoutCancel keeps
// it from being cancelled) is inside no task: a Do with it takes permits
// of its own, and a full group turns it away.
func TestAContextKeptPastTheHandlerTakesPermitsOfItsOwn(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0), nil)
	kept := make(chan context.Context, 1)
	g := newGate()
	srv := serve(t, httplimit.Handler(e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bg" {
			kept <- context.WithoutCancel(r.Context())
			return
		}
		g.ServeHTTP(w, r)
	}), httplimit.ServerOptions{}))
	require.Equal(t, http.StatusOK, get(t.Context(), srv.Client(), srv.URL+"/bg").code)
	bg := <-kept
	busy := goGet(t.Context(), srv.Client(), srv.URL+"/busy?id=1")
	g.waitEntered(t)
	ran := false
	_, err := groupconc.Do(bg, e, "/busy", func(context.Context) (int, error) { ran = true; return 0, nil }, groupconc.SubmitOptions{})
	assert.False(t, ran, "fn ran while its group was full")
	assert.ErrorIs(t, err, groupconc.ErrRejected)
	g.open(t)
	recv(t, busy)
}

// A RejectionHandler that runs the request through Rejection.Run lets the
// handler's panic go on up to net/http, which aborts the response: it does
// not arrive whole, with an error written after it.
func TestAPanicThroughRejectionRunReachesNetHTTP(t *testing.T) {
	b := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).
		RejectionHandler(func(ctx context.Context, r *groupconc.Rejection) (any, error) {
			return r.Run(ctx) // run it anyway, without permits
		})
	e := newExecutor(t, b, nil)
	g := newGate()
	panics := make(chan any, 2)
	limited := httplimit.Handler(e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/abort" {
			_, _ = w.Write([]byte("half"))
			panic(http.ErrAbortHandler)
		}
		g.ServeHTTP(w, r)
	}), httplimit.ServerOptions{Key: func(*http.Request) string { return "one" }})
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			panics <- v
			if v != nil {
				panic(v)
			}
		}()
		limited.ServeHTTP(w, r)
	}))
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	busy := goGet(t.Context(), srv.Client(), srv.URL+"/busy?id=1")
	g.waitEntered(t)
	got := get(t.Context(), c, srv.URL+"/abort")
	assert.Equal(t, any(http.ErrAbortHandler), <-panics, "the panic reaches net/http")
	assert.Error(t, got.err, "an aborted response must not arrive whole; got %d %q", got.code, got.body)
	g.open(t)
	recv(t, busy)
	assert.Nil(t, <-panics)
}

// An answer with no body gives its permits back at once over HTTP/2 too,
// whose transport gives it a body of its own rather than http.NoBody.
func TestAnAnswerWithNoBodyOverHTTP2GivesThePermitsBackAtOnce(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), nil)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/empty" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		_, _ = w.Write([]byte("body"))
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := newClient(t, e, srv.Client().Transport)
	for _, call := range []struct{ method, path string }{{http.MethodHead, "/full"}, {http.MethodGet, "/empty"}} {
		req, err := http.NewRequestWithContext(t.Context(), call.method, srv.URL+call.path, nil)
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err)
		assert.Equal(t, 2, resp.ProtoMajor)
		assert.Equal(t, 0, e.Stats().Running, "%s %s: the permits are back before the body is closed", call.method, call.path)
		require.NoError(t, resp.Body.Close())
	}
}

// The default key names the port the scheme implies, so a limit set for
// "host:80" holds for http://host/.
func TestTheDefaultKeyNamesThePort(t *testing.T) {
	for url, want := range map[string]string{
		"http://billing.internal/invoices":  "billing.internal:80",
		"https://billing.internal/invoices": "billing.internal:443",
		"https://billing.internal:8443/":    "billing.internal:8443",
		"http://[::1]/":                     "[::1]:80",
		"https://BILLING.Internal/":         "billing.internal:443",
		"https://Billing.internal:8443/":    "billing.internal:8443",
	} {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		assert.Equal(t, want, httplimit.HostKey(req), url)
	}
	rec := newRecorder()
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(4).
		PerGroupMaxConcurrency(map[string]int{"billing.internal:80": 1}), rec)
	g := newGate()
	srv := serve(t, g)
	addr := srv.Listener.Addr().String()
	c := newClient(t, e, &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}})
	a := goGet(t.Context(), c, "http://billing.internal/invoices?id=a")
	b := goGet(t.Context(), c, "http://billing.internal/invoices?id=b")
	rec.waitSubmitted(t, 2)
	g.waitEntered(t)
	eventually(t, "one call running and one waiting", func() bool {
		st, _ := e.GroupStats("billing.internal:80")
		return st.Running == 1 && st.Waiting == 1
	})
	g.open(t)
	g.open(t)
	recv(t, a)
	recv(t, b)
}

// Retry-After is whole seconds rounded up, at least one, for any duration,
// the largest included: rounding up must not overflow into a negative.
func TestRetryAfterIsRoundedUpSecondsForAnyDuration(t *testing.T) {
	rejected := &groupconc.RejectedError{GroupKey: "g", Reason: groupconc.ReasonGroupQueueFull}
	for d, want := range map[time.Duration]string{
		0:                             "1",
		time.Nanosecond:               "1",
		time.Second:                   "1",
		time.Second + 1:               "2",
		math.MaxInt64:                 "9223372037",
		math.MaxInt64 - time.Second/2: "9223372037",
		math.MaxInt64 / time.Second * time.Second: "9223372036",
	} {
		rec := httptest.NewRecorder()
		httplimit.WriteError(rec, rejected, d)
		assert.Equal(t, want, rec.Header().Get("Retry-After"), "RetryAfter %d", d)
	}
}

// A key the request makes that the executor refuses is the request's
// fault: a path deeper than the tree allows gets 400, and runs nothing.
// Parents in a cycle are the server's: 500.
func TestAKeyTooDeepGets400AndACycleOfParents500(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy *groupconc.PolicyBuilder
		path   string
		code   int
	}{
		{"nine ancestors", groupconc.NewPolicyBuilder().ParentSeparator("/"), "/a/b/c/d/e/f/g/h/i/j", 400},
		{"eight ancestors", groupconc.NewPolicyBuilder().ParentSeparator("/"), "/a/b/c/d/e/f/g/h/i", 200},
		{"a cycle", groupconc.NewPolicyBuilder().ParentResolver(func(string) string { return "/x" }), "/x", 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newExecutor(t, tc.policy, nil)
			var ran atomic.Bool
			srv := serve(t, httplimit.Handler(e, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran.Store(true) }), httplimit.ServerOptions{}))
			got := get(t.Context(), srv.Client(), srv.URL+tc.path)
			require.NoError(t, got.err)
			assert.Equal(t, tc.code, got.code)
			assert.Equal(t, tc.code == 200, ran.Load(), "the handler ran")
			assert.Empty(t, got.retryAfter, "Retry-After")
		})
	}
}
