package httplimit_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// spanKey marks the context of a request that a wrapping transport sent.
type spanKey struct{}

// A response's Request has the caller's context, not the task's that the
// call was sent with. A follow-up built from resp.Request.Context() while
// the body is open then takes a permit of its own. With the task's context
// it would run inside that task, past the host's limit. This holds too
// for a Base that sends a copy of its own, with a context derived from
// the task's, as a tracing transport does.
func TestAFollowUpWithTheResponsesRequestContextTakesAPermitOfItsOwn(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		for _, wrapped := range []bool{false, true} {
			t.Run(fmt.Sprintf("http2=%v/wrapped=%v", h2, wrapped), func(t *testing.T) {
				e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0), nil)
				var hits atomic.Int64
				srv, c := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					hits.Add(1)
					fmt.Fprint(w, "page")
				}), h2)
				base := c.Transport
				if wrapped {
					base = roundTripFunc(func(r *http.Request) (*http.Response, error) {
						return c.Transport.RoundTrip(r.Clone(context.WithValue(r.Context(), spanKey{}, "span")))
					})
				}
				tr := &httplimit.Transport{Base: base, Executor: e}
				req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/1", nil)
				require.NoError(t, err)
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				if !wrapped {
					assert.Same(t, req, resp.Request, "the response's Request is the caller's")
				}
				assert.Same(t, req.Context(), resp.Request.Context())

				next, err := http.NewRequestWithContext(resp.Request.Context(), http.MethodGet, srv.URL+"/2", nil)
				require.NoError(t, err)
				got, err := (&http.Client{Transport: tr}).Do(next)
				if err == nil {
					_, _ = io.Copy(io.Discard, got.Body)
					got.Body.Close()
				}
				assert.ErrorIs(t, err, groupconc.ErrRejected, "the follow-up passed the host's limit of 1")
				assert.EqualValues(t, 1, hits.Load(), "calls that reached the server")
			})
		}
	}
}
