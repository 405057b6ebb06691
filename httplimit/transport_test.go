package httplimit_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// newClient returns a client whose Transport limits through e over a
// base transport of its own, whose connections close with the test.
func newClient(t *testing.T, e *groupconc.GroupExecutor, base http.RoundTripper) *http.Client {
	if base == nil {
		base = &http.Transport{}
	}
	c := &http.Client{Transport: &httplimit.Transport{Base: base, Executor: e}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func hostOf(t *testing.T, rawURL string) string {
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	return u.Host
}

func TestTheTransportLimitsConcurrentCallsPerHost(t *testing.T) {
	rec := newRecorder()
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(2), rec)
	c := newClient(t, e, nil)
	const calls = 6
	gates := []*gate{newGate(), newGate()}
	var replies []<-chan reply
	for _, g := range gates {
		srv := serve(t, g)
		for i := range calls {
			replies = append(replies, goGet(t.Context(), c, fmt.Sprintf("%s/?id=%d", srv.URL, i)))
		}
	}
	rec.waitSubmitted(t, 2*calls)
	for _, g := range gates {
		g.waitEntered(t)
		g.waitEntered(t)
	}
	eventually(t, "all but two calls a host waiting, unsent", func() bool { return e.Stats().Waiting == 2*(calls-2) })
	for _, g := range gates {
		for range calls {
			g.open(t)
		}
	}
	for _, ch := range replies {
		assert.Equal(t, 200, recv(t, ch).code)
	}
	for i, g := range gates {
		assert.EqualValues(t, 2, g.max.Load(), "most calls at once in server %d", i)
	}
	assert.EqualValues(t, 2*calls, e.Stats().Succeeded)
}

func TestACallHoldsItsPermitsUntilItsBodyIsClosedOrReadToTheEnd(t *testing.T) {
	rec := newRecorder()
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), rec)
	c := newClient(t, e, nil)
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "body") }))
	host := hostOf(t, srv.URL)

	resp, err := c.Get(srv.URL + "/held")
	require.NoError(t, err)
	rec.waitSubmitted(t, 1)
	second := goGet(t.Context(), c, srv.URL+"/second")
	rec.waitSubmitted(t, 1)
	eventually(t, "the second call waiting, unsent", func() bool { st, _ := e.GroupStats(host); return st.Waiting == 1 })
	st, _ := e.GroupStats(host)
	assert.Equal(t, 1, st.Running, "the first call, its body open")
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, "body", recv(t, second).body)

	resp, err = c.Get(srv.URL + "/read")
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "body", string(b))
	st, _ = e.GroupStats(host)
	assert.Equal(t, 0, st.Running, "read to io.EOF, the body gave the permit back")
	require.NoError(t, resp.Body.Close())

	resp, err = c.Head(srv.URL + "/head")
	require.NoError(t, err)
	st, _ = e.GroupStats(host)
	assert.Equal(t, 0, st.Running, "a response with no body gives the permit back at once")
	resp.Body.Close()
	assert.EqualValues(t, 4, e.Stats().Succeeded)
}

// After 101 Switching Protocols the body is the connection, though
// net/http gives it a ContentLength of 0. The call holds its permits, like
// a connection, until that body is closed, and the body stays writable.
func TestAnUpgradedConnectionHoldsItsPermitsUntilClosed(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder(), newRecorder())
	c := newClient(t, e, nil)
	srv := serve(t, http.HandlerFunc(echoUpgrade))
	host := hostOf(t, srv.URL)
	rw := upgradeEcho(t, c, srv.URL, "hi\n")
	st, _ := e.GroupStats(host)
	assert.Equal(t, 1, st.Running, "the open connection holds its permit")
	require.NoError(t, rw.Close())
	st, _ = e.GroupStats(host)
	assert.Equal(t, 0, st.Running, "closed, it gave the permit back")
}

// closeRecorder is a request body that records its Close.
type closeRecorder struct {
	io.Reader
	closed atomic.Bool
}

func (c *closeRecorder) Close() error { c.closed.Store(true); return nil }

func TestATurnedAwayCallReturnsANotSentErrorWrappingTheRejection(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0), nil)
	c := newClient(t, e, nil)
	var hits atomic.Int64
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); fmt.Fprint(w, "x") }))
	host := hostOf(t, srv.URL)
	held, err := c.Get(srv.URL)
	require.NoError(t, err)
	defer held.Body.Close()

	body := &closeRecorder{Reader: strings.NewReader("payload")}
	req, err := http.NewRequest(http.MethodPost, srv.URL, body)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.Error(t, err)
	assert.Nil(t, resp)
	assert.ErrorIs(t, err, groupconc.ErrRejected)
	var re *groupconc.RejectedError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, groupconc.ReasonGroupQueueFull, re.Reason)
	assert.Equal(t, host, re.GroupKey)
	var ns *httplimit.NotSentError
	require.ErrorAs(t, err, &ns)
	assert.Equal(t, host, ns.Key)
	assert.Equal(t, fmt.Sprintf("httplimit: request of group %q not sent: %v", host, re), ns.Error())
	assert.True(t, body.closed.Load(), "the request's body is closed, as a RoundTripper must")
	assert.EqualValues(t, 1, hits.Load(), "the turned-away call never reached the server")
}

// recordingTransport records the context each request is sent with.
type recordingTransport struct {
	base http.RoundTripper
	ctxs chan context.Context
}

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.ctxs <- req.Context()
	return r.base.RoundTrip(req)
}

func (r *recordingTransport) CloseIdleConnections() {
	r.base.(*http.Transport).CloseIdleConnections()
}

func TestTheRequestsContextIsCarriedAndEndsTheWait(t *testing.T) {
	rec := newRecorder()
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), rec)
	base := &recordingTransport{base: &http.Transport{}, ctxs: make(chan context.Context, 2)}
	c := newClient(t, e, base)
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "x") }))

	type key struct{}
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.WithValue(t.Context(), key{}, "v"), deadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	held, err := c.Do(req)
	require.NoError(t, err)
	sent := <-base.ctxs
	assert.Equal(t, "v", sent.Value(key{}), "the request's values")
	d, ok := sent.Deadline()
	assert.True(t, ok && d.Equal(deadline), "the request's deadline")
	rec.waitSubmitted(t, 1)

	wctx, wcancel := context.WithCancel(t.Context())
	waiting := goGet(wctx, c, srv.URL+"/waits")
	rec.waitSubmitted(t, 1)
	wcancel()
	got := recv(t, waiting)
	assert.ErrorIs(t, got.err, context.Canceled)
	var ns *httplimit.NotSentError
	assert.ErrorAs(t, got.err, &ns, "the call ended while it waited: not sent")
	assert.Equal(t, groupconc.StatusCancelled, rec.waitCompleted(t).Status)
	assert.Len(t, base.ctxs, 0, "nothing was sent for it")
	held.Body.Close()
}

func TestClosingTheExecutorCancelsACallAndGivesBackItsPermits(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
	c := newClient(t, e, nil)
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("head"))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the rest never comes
	}))
	resp, err := c.Get(srv.URL)
	require.NoError(t, err)
	e.Close()
	_, err = io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, groupconc.ErrClosed, "the call's context is the task's, cancelled by Close")
	resp.Body.Close()
	assert.Equal(t, 0, e.Stats().Running)
	_, err = c.Get(srv.URL)
	assert.ErrorIs(t, err, groupconc.ErrClosed)
}

// panicking is a base RoundTripper that panics.
type panicking struct{}

func (panicking) RoundTrip(*http.Request) (*http.Response, error) { panic("base") }

func TestAPanicInTheBaseGoesUpAndGivesBackThePermits(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), nil)
	tr := &httplimit.Transport{Base: panicking{}, Executor: e}
	req, err := http.NewRequest(http.MethodGet, "http://example.invalid/", nil)
	require.NoError(t, err)
	assert.PanicsWithValue(t, "base", func() { tr.RoundTrip(req) })
	assert.Equal(t, 0, e.Stats().Running)
	assert.EqualValues(t, 1, e.Stats().Failed)
}

func TestARejectionHandlersResponseIsReturnedInPlace(t *testing.T) {
	b := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).
		RejectionHandler(func(ctx context.Context, r *groupconc.Rejection) (any, error) {
			return &http.Response{StatusCode: 299, Body: io.NopCloser(strings.NewReader("cached"))}, nil
		})
	e := newExecutor(t, b, nil)
	c := newClient(t, e, nil)
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "x") }))
	held, err := c.Get(srv.URL)
	require.NoError(t, err)
	defer held.Body.Close()
	got := get(t.Context(), c, srv.URL)
	require.NoError(t, got.err)
	assert.Equal(t, 299, got.code)
	assert.Equal(t, "cached", got.body)
}

func TestTheKeyFuncChoosesTheGroupAndAnEmptyKeyIsNotSent(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
	tr := &httplimit.Transport{Base: &http.Transport{}, Executor: e, Key: func(r *http.Request) string { return r.Header.Get("X-Backend") }}
	c := &http.Client{Transport: tr}
	defer c.CloseIdleConnections()
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	assert.Equal(t, 200, get(t.Context(), c, srv.URL, "X-Backend", "billing").code)
	_, ok := e.GroupStats("billing")
	assert.True(t, ok, "the call ran in the group billing")
	assert.ErrorIs(t, get(t.Context(), c, srv.URL).err, httplimit.ErrNoKey)
}

func TestManyCallsAtOnceNeverExceedTheLimit(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(3), nil)
	c := newClient(t, e, nil)
	var cur, max atomic.Int64
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		for m := max.Load(); n > m && !max.CompareAndSwap(m, n); m = max.Load() {
		}
		defer cur.Add(-1)
		fmt.Fprint(w, "x")
	}))
	var wg sync.WaitGroup
	var failed atomic.Int64
	for range 50 {
		wg.Go(func() {
			if r := get(t.Context(), c, srv.URL); r.err != nil || r.code != 200 {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	assert.Zero(t, failed.Load())
	assert.LessOrEqual(t, max.Load(), int64(3))
	assert.Equal(t, 0, e.Stats().Running)
}
