package httplimit_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// recorder hears an executor's tasks through its listener.
type recorder struct {
	submitted chan string                     // task IDs, as accepted
	completed chan groupconc.GroupResult[any] // results, as they end
}

func newRecorder() *recorder {
	return &recorder{submitted: make(chan string, 256), completed: make(chan groupconc.GroupResult[any], 256)}
}

func (r *recorder) listener() groupconc.TaskLifecycleListener {
	return groupconc.ListenerFuncs{
		Submitted: func(_, id string) { r.submitted <- id },
		Completed: func(_, _ string, res groupconc.GroupResult[any]) { r.completed <- res },
	}
}

// waitSubmitted waits until n more tasks were accepted.
func (r *recorder) waitSubmitted(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-r.submitted:
		case <-time.After(10 * time.Second):
			t.Fatal("hung: a task was never submitted")
		}
	}
}

// waitCompleted returns the next task result.
func (r *recorder) waitCompleted(t *testing.T) groupconc.GroupResult[any] {
	t.Helper()
	select {
	case res := <-r.completed:
		return res
	case <-time.After(10 * time.Second):
		t.Fatal("hung: no task completed")
	}
	return groupconc.GroupResult[any]{}
}

// newExecutor builds an executor from b with rec as its listener (if not
// nil), and closes it at the end of the test.
func newExecutor(t *testing.T, b *groupconc.PolicyBuilder, rec *recorder) *groupconc.GroupExecutor {
	t.Helper()
	if rec != nil {
		b = b.TaskLifecycleListener(rec.listener())
	}
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	e := groupconc.New(p)
	t.Cleanup(func() { e.Close() })
	return e
}

// gate is a handler that holds each request until released, and counts
// the requests inside it.
type gate struct {
	entered  chan string   // the id query parameter of each request, as it enters
	release  chan struct{} // one send lets one request out
	cur, max atomic.Int64
}

func newGate() *gate {
	return &gate{entered: make(chan string, 64), release: make(chan struct{})}
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.pass(r.Context(), r.URL.Query().Get("id"))
	fmt.Fprint(w, "ok ", r.URL.Query().Get("id"))
}

// pass enters the gate as id and waits until it is let out or ctx ends.
func (g *gate) pass(ctx context.Context, id string) {
	n := g.cur.Add(1)
	for m := g.max.Load(); n > m && !g.max.CompareAndSwap(m, n); m = g.max.Load() {
	}
	g.entered <- id
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	g.cur.Add(-1)
}

// waitEntered returns the id of the next request to enter.
func (g *gate) waitEntered(t *testing.T) string {
	t.Helper()
	select {
	case id := <-g.entered:
		return id
	case <-time.After(10 * time.Second):
		t.Fatal("hung: no request entered the handler")
	}
	return ""
}

// open releases one request.
func (g *gate) open(t *testing.T) {
	t.Helper()
	select {
	case g.release <- struct{}{}:
	case <-time.After(10 * time.Second):
		t.Fatal("hung: no request to release")
	}
}

// serve starts a test server of h on 127.0.0.1, closed at the end of the
// test, and returns it.
func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// reply is what a client got.
type reply struct {
	code       int
	retryAfter string
	body       string
	err        error
}

// get sends a GET of url with the headers given as name, value pairs.
func get(ctx context.Context, c *http.Client, url string, header ...string) reply {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return reply{err: err}
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header.Get("Retry-After"), string(b), err}
}

// goGet sends get on a goroutine of its own and returns its reply's channel.
func goGet(ctx context.Context, c *http.Client, url string, header ...string) <-chan reply {
	ch := make(chan reply, 1)
	go func() { ch <- get(ctx, c, url, header...) }()
	return ch
}

func recv(t *testing.T, ch <-chan reply) reply {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("hung: no reply")
	}
	return reply{}
}

// eventually spins until cond holds, for state that no event reports.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("hung: never %s", what)
		}
		runtime.Gosched()
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use, for a server's
// ErrorLog.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// headerPriority is a Priority func that reads X-Priority: "high", "low",
// or normal for anything else.
func headerPriority(r *http.Request) groupconc.Priority {
	switch r.Header.Get("X-Priority") {
	case "high":
		return groupconc.PriorityHigh
	case "low":
		return groupconc.PriorityLow
	}
	return groupconc.PriorityNormal
}

// startOrder runs in a synctest bubble. It sends "first", then "low", ""
// and "high", through send, each once the one before has its place
// (synctest.Wait). Over a network nothing shows that: a request is counted
// in Waiting a moment before. Each is sent with its id as X-Priority, and
// passes g as it runs. Once all four are sent it calls sent, then lets
// them out of g one at a time. It returns the order in which the last
// three entered g.
func startOrder(t *testing.T, g *gate, send func(id string), sent func()) []string {
	t.Helper()
	send("first")
	synctest.Wait()
	assert.Equal(t, "first", g.waitEntered(t))
	for _, id := range []string{"low", "", "high"} { // each waits behind the one before
		send(id)
		synctest.Wait()
	}
	sent()
	var order []string
	for range 3 {
		g.open(t)
		order = append(order, g.waitEntered(t))
	}
	g.open(t)
	return order
}

// echoUpgrade answers 101 Switching Protocols and echoes what the client
// writes on the connection until the client closes it.
func echoUpgrade(w http.ResponseWriter, _ *http.Request) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer conn.Close()
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	brw.Flush()
	io.Copy(conn, brw)
}

// upgradeEcho upgrades a GET of url through c to echoUpgrade's protocol,
// and checks that msg comes back. It returns the open connection.
func upgradeEcho(t *testing.T, c *http.Client, url, msg string) io.ReadWriteCloser {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	resp, err := c.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	rw, ok := resp.Body.(io.ReadWriteCloser)
	require.True(t, ok, "the body of a 101 stays writable")
	_, err = rw.Write([]byte(msg))
	require.NoError(t, err)
	echo := make([]byte, len(msg))
	_, err = io.ReadFull(rw, echo)
	require.NoError(t, err)
	assert.Equal(t, msg, string(echo))
	return rw
}
