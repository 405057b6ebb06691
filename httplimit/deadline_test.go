package httplimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// A handler that derives a context from its request's, as any call it
// makes downstream does, sees a deadline set by an outer middleware (as
// docs/http.md advises) as DeadlineExceeded, not as Canceled.
func TestAHandlersDerivedContextEndsWithTheRequestsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
		var derived error
		limited := httplimit.Handler(e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d, stop := context.WithCancel(r.Context())
			defer stop()
			<-d.Done()
			derived = d.Err()
		}), httplimit.ServerOptions{})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		limited.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
		assert.ErrorIs(t, derived, context.DeadlineExceeded)
	})
}
