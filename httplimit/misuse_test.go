package httplimit_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// A nil executor acts as one closed, so a Handler of one would answer
// every request 503, as if the server were busy. Handler and Middleware
// refuse it at once, and a nil handler too.
func TestHandlerOfANilExecutorPanicsAtOnce(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	assert.PanicsWithValue(t, "httplimit: Handler of a nil executor", func() {
		httplimit.Handler(nil, ok, httplimit.ServerOptions{})
	})
	assert.PanicsWithValue(t, "httplimit: Middleware of a nil executor", func() {
		httplimit.Middleware(nil, httplimit.ServerOptions{})
	})
	assert.PanicsWithValue(t, "httplimit: Handler of a nil handler", func() {
		httplimit.Handler(e, nil, httplimit.ServerOptions{})
	})
}

// A Transport with no Executor sends nothing, closes the request's body,
// and says why, rather than that an executor was closed.
func TestATransportWithNoExecutorSaysSo(t *testing.T) {
	body := &closeCounter{Reader: strings.NewReader("x")}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://127.0.0.1:1/", body)
	require.NoError(t, err)
	_, err = (&httplimit.Transport{}).RoundTrip(req)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Transport.Executor is nil")
	assert.NotErrorIs(t, err, groupconc.ErrClosed)
	assert.Equal(t, 1, body.closed, "the request's body is closed")
}

// A 400 names what is wrong with the request, over a real connection.
func TestABadRequestSaysWhatIsWrong(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
	h := httplimit.Handler(e, http.NotFoundHandler(), httplimit.ServerOptions{
		Key: httplimit.HeaderKey("X-Tenant", ""),
	})
	srv := serve(t, h)
	got := get(t.Context(), srv.Client(), srv.URL)
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusBadRequest, got.code)
	assert.Equal(t, "Bad Request: "+httplimit.ErrNoKey.Error()+"\n", got.body)
}

type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// A request with no URL is not sent, and its body is closed, as
// http.Transport answers it, rather than a panic in HostKey. HostKey gives
// it no key, as it gives a request with no host none.
func TestARequestWithNoURLIsNotSent(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
	body := &closeCounter{Reader: strings.NewReader("x")}
	req := &http.Request{Method: http.MethodPost, Header: http.Header{}, Body: body}
	assert.Empty(t, httplimit.HostKey(req))
	var resp *http.Response
	var err error
	require.NotPanics(t, func() { resp, err = (&httplimit.Transport{Executor: e}).RoundTrip(req) })
	assert.Nil(t, resp)
	var ns *httplimit.NotSentError
	require.ErrorAs(t, err, &ns)
	assert.ErrorIs(t, err, httplimit.ErrNoKey)
	assert.Equal(t, 1, body.closed, "the request's body is closed")
	assert.Zero(t, e.Stats().Submitted, "nothing was submitted")
}
