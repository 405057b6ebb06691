package httplimit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// Over HTTP/2, a call whose context ends while it waits is not sent, and
// the call holding the permit goes on.
func TestACallOverHTTP2ThatLeavesItsWaitIsNotSent(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), nil)
	g := newGate()
	srv, base := startServer(t, g, true)
	c := newClient(t, e, base.Transport)
	first := goGet(t.Context(), c, srv.URL+"/?id=first")
	require.Equal(t, "first", g.waitEntered(t))
	ctx, cancel := context.WithCancel(t.Context())
	second := goGet(ctx, c, srv.URL+"/?id=second")
	eventually(t, "the second call waiting", func() bool { return e.Stats().Waiting == 1 })
	cancel()
	var ns *httplimit.NotSentError
	err := recv(t, second).err
	assert.True(t, errors.As(err, &ns), "got %v, want a NotSentError", err)
	assert.ErrorIs(t, err, context.Canceled)
	g.open(t)
	assert.Equal(t, "ok first", recv(t, first).body)
	assert.Empty(t, g.entered, "the cancelled call was never sent")
	assert.Equal(t, 0, e.Stats().Running)
}

// Informational answers (103 Early Hints) pass through to the caller's
// trace. A trace that fails on one fails the round trip, which gives the
// permit back.
func TestInformationalAnswersPassThroughTheTransport(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("http2=%v", h2), func(t *testing.T) {
			e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0), nil)
			srv, base := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Link", "</style.css>; rel=preload")
				w.WriteHeader(http.StatusEarlyHints)
				fmt.Fprint(w, "body")
			}), h2)
			c := newClient(t, e, base.Transport)
			var codes []int
			trace := func(fail bool) context.Context {
				return httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{
					Got1xxResponse: func(code int, _ textproto.MIMEHeader) error {
						codes = append(codes, code)
						if fail {
							return errors.New("no hints")
						}
						return nil
					},
				})
			}
			assert.Equal(t, "body", get(trace(false), c, srv.URL).body)
			assert.Error(t, get(trace(true), c, srv.URL).err)
			assert.Equal(t, []int{103, 103}, codes)
			assert.Equal(t, 0, e.Stats().Running, "the permits are back")
			assert.Equal(t, "body", get(t.Context(), c, srv.URL).body)
		})
	}
}
