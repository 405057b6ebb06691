package httplimit_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// A server shut down while a request waits for its permit lets it run,
// as any request in flight: Shutdown returns once both are served.
func TestAServerShutDownServesTheRequestsThatWait(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("http2=%v", h2), func(t *testing.T) {
			e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), nil)
			g := newGate()
			h := httplimit.Handler(e, g, httplimit.ServerOptions{Key: func(*http.Request) string { return "one" }})
			srv, c := startServer(t, h, h2)
			first := goGet(t.Context(), c, srv.URL+"/?id=first")
			require.Equal(t, "first", g.waitEntered(t))
			second := goGet(t.Context(), c, srv.URL+"/?id=second")
			eventually(t, "the second waiting", func() bool { return e.Stats().Waiting == 1 })
			done := make(chan error, 1)
			go func() { done <- srv.Config.Shutdown(t.Context()) }()
			g.open(t)
			assert.Equal(t, "ok first", recv(t, first).body)
			require.Equal(t, "second", g.waitEntered(t))
			g.open(t)
			assert.Equal(t, "ok second", recv(t, second).body)
			assert.NoError(t, <-done)
			assert.EqualValues(t, 2, e.Stats().Succeeded)
		})
	}
}

// A CONNECT request names no path: the default key puts it in the group
// "/".
func TestAConnectRequestIsInTheGroupSlash(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
	srv, _ := startServer(t, httplimit.Handler(e, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), httplimit.ServerOptions{}), false)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodConnect, srv.URL, nil)
	require.NoError(t, err)
	req.URL.Path = ""
	req.Host = "example.com:443"
	c := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(c.CloseIdleConnections)
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	st, ok := e.GroupStats("/")
	assert.True(t, ok && st.Succeeded == 1, "the CONNECT ran in the group /")
}
