package httplimit_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// The handler gets the server's own ResponseWriter, so each call of an
// http.ResponseController reaches it, over HTTP/1.1 and HTTP/2.
func TestAResponseControllerReachesTheServersWriter(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("http2=%v", h2), func(t *testing.T) {
			e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
			h := httplimit.Handler(e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rc := http.NewResponseController(w)
				later := time.Now().Add(time.Hour)
				fmt.Fprintln(w, rc.SetWriteDeadline(later), rc.SetReadDeadline(later), rc.EnableFullDuplex())
				b, err := io.ReadAll(r.Body) // after a write: full duplex
				fmt.Fprintln(w, string(b), err)
			}), httplimit.ServerOptions{})
			srv, c := startServer(t, h, h2)
			resp, err := c.Post(srv.URL, "text/plain", strings.NewReader("up"))
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, "<nil> <nil> <nil>\nup <nil>\n", string(b))
		})
	}
}

// Over HTTP/2 too, a handler's panic reaches net/http: the stream is
// reset, http.ErrAbortHandler is not logged, and the permit is back.
func TestAPanicOverHTTP2KeepsNetHTTPsBehaviour(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0), nil)
	h := httplimit.Handler(e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/boom":
			panic("boom")
		case "/abort":
			fmt.Fprint(w, "half")
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		}
		fmt.Fprint(w, "fine")
	}), httplimit.ServerOptions{Key: func(*http.Request) string { return "one" }})
	var logs syncBuffer
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(&logs, "", 0)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := srv.Client()
	t.Cleanup(c.CloseIdleConnections)
	assert.Error(t, get(t.Context(), c, srv.URL+"/boom").err)
	eventually(t, "the panic logged", func() bool { return strings.Contains(logs.String(), "boom") })
	assert.Error(t, get(t.Context(), c, srv.URL+"/abort").err, "the aborted body does not end cleanly")
	assert.Equal(t, "fine", get(t.Context(), c, srv.URL+"/fine").body, "the permit is back")
	assert.Equal(t, 1, strings.Count(logs.String(), "panic serving"), "net/http logs the panic, not ErrAbortHandler: %s", logs.String())
	assert.EqualValues(t, 2, e.Stats().Failed)
}
