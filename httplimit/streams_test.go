package httplimit_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

var isolations = []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare}

// startServer serves h over HTTP/1.1, or over HTTP/2 with TLS, and
// returns the server and a client of it.
func startServer(t *testing.T, h http.Handler, http2 bool) (*httptest.Server, *http.Client) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	if http2 {
		srv.EnableHTTP2 = true
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	c := srv.Client()
	t.Cleanup(c.CloseIdleConnections)
	return srv, c
}

func TestAStreamThroughTheMiddlewareFlushesAndHoldsItsPermitUntilItEnds(t *testing.T) {
	for _, iso := range isolations {
		for _, h2 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/http2=%v", iso, h2), func(t *testing.T) {
				e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(iso), nil)
				end := make(chan struct{})
				h := httplimit.Handler(e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(w, "data: 1\n\n")
					if err := http.NewResponseController(w).Flush(); err != nil {
						return
					}
					<-end
					fmt.Fprint(w, "data: 2\n\n")
				}), httplimit.ServerOptions{})
				srv, c := startServer(t, h, h2)
				resp, err := c.Get(srv.URL + "/events")
				require.NoError(t, err)
				defer resp.Body.Close()
				events := bufio.NewReader(resp.Body)
				line, err := events.ReadString('\n')
				require.NoError(t, err)
				assert.Equal(t, "data: 1\n", line, "the first event came before the handler returned")
				st, _ := e.GroupStats("/events")
				assert.Equal(t, 1, st.Running, "the stream holds its permit")
				close(end)
				rest, err := io.ReadAll(events)
				require.NoError(t, err)
				assert.Equal(t, "\ndata: 2\n\n", string(rest))
				eventually(t, "the permit back", func() bool { return e.Stats().Running == 0 })
			})
		}
	}
}

func TestAConnectionHijackedThroughTheMiddlewareWorks(t *testing.T) {
	for _, iso := range isolations {
		t.Run(iso.String(), func(t *testing.T) {
			e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(iso), nil)
			h := httplimit.Handler(e, http.HandlerFunc(echoUpgrade), httplimit.ServerOptions{})
			srv, c := startServer(t, h, false)
			rw := upgradeEcho(t, c, srv.URL+"/ws", "hi")
			st, _ := e.GroupStats("/ws")
			assert.Equal(t, 1, st.Running, "the handler serving the connection holds its permit")
			require.NoError(t, rw.Close())
			eventually(t, "the permit back", func() bool { return e.Stats().Running == 0 })
		})
	}
}

func TestAnHTTP2ClientThatCancelsEndsItsWaitAndTheHandlerNeverRuns(t *testing.T) {
	for _, iso := range isolations {
		t.Run(iso.String(), func(t *testing.T) {
			e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(iso).GlobalMaxInFlight(1).DefaultMaxConcurrencyPerGroup(1), nil)
			g := newGate()
			h := httplimit.Handler(e, g, httplimit.ServerOptions{Key: func(*http.Request) string { return "one" }})
			srv, c := startServer(t, h, true)
			first := goGet(t.Context(), c, srv.URL+"/?id=first")
			require.Equal(t, "first", g.waitEntered(t))
			ctx, cancel := context.WithCancel(t.Context())
			second := goGet(ctx, c, srv.URL+"/?id=second")
			eventually(t, "the second waiting", func() bool { return e.Stats().Waiting == 1 })
			cancel()
			assert.ErrorIs(t, recv(t, second).err, context.Canceled)
			eventually(t, "the wait ended", func() bool { return e.Stats().Waiting == 0 })
			g.open(t)
			assert.Equal(t, 200, recv(t, first).code)
			assert.Empty(t, g.entered, "the cancelled request never ran")
			assert.EqualValues(t, 1, e.Stats().Cancelled)
		})
	}
}

func TestACallWhoseContextEndsMidBodyGivesItsPermitsBackOverHTTP2(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), nil)
	srv, base := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "first\n")
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}), true)
	c := newClient(t, e, base.Transport)
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	require.Equal(t, "HTTP/2.0", resp.Proto)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "first\n", line)
	assert.Equal(t, 1, e.Stats().Running)
	cancel()
	eventually(t, "the permit back, the body not closed", func() bool { return e.Stats().Running == 0 })
	_, err = io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, context.Canceled)
	require.NoError(t, resp.Body.Close())
	assert.EqualValues(t, 1, e.Stats().Cancelled)
}
