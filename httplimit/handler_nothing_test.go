package httplimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// A RejectionHandler that returns (nil, nil) gives the request nothing to
// serve. It gets 503 with Retry-After, the error ErrorHandler is given
// reads 503 by StatusCode, and the executor counts a success, as the
// Handler doc comment and docs/http.md say.
func TestARejectionHandlerReturningNothingGets503(t *testing.T) {
	nothing := func(context.Context, *groupconc.Rejection) (any, error) { return nil, nil }
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0).RejectionHandler(nothing), nil)
	held, release := make(chan struct{}), make(chan struct{})
	h, err := groupconc.Submit(t.Context(), e, "/x", "hold", func(context.Context) (int, error) {
		close(held)
		<-release
		return 0, nil
	})
	require.NoError(t, err)
	<-held

	var got error
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("next ran, want turned away") })
	limited := httplimit.Handler(e, next, httplimit.ServerOptions{
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			got = err
			httplimit.WriteError(w, err, 0)
		},
	})
	rr := httptest.NewRecorder()
	limited.ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/x", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rr.Code)
	assert.Equal(t, "1", rr.Header().Get("Retry-After"))
	require.Error(t, got)
	assert.Equal(t, http.StatusServiceUnavailable, httplimit.StatusCode(got))

	close(release)
	h.Wait()
	st, ok := e.GroupStats("/x")
	require.True(t, ok)
	assert.Equal(t, uint64(2), st.Succeeded, "the held task and the turned-away request")
}
