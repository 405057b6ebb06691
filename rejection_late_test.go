package groupconc_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// TestRejectionRunAfterTheHandlerReturnedRunsNothing: a handler that keeps
// its Rejection cannot run the task later, after the task has completed.
func TestRejectionRunAfterTheHandlerReturnedRunsNothing(t *testing.T) {
	for _, run := range []bool{false, true} {
		var kept *groupconc.Rejection
		var started atomic.Int32
		p := mustBuild(t, groupconc.NewPolicyBuilder().
			DefaultQueueThresholdPerGroup(0).
			TaskLifecycleListener(groupconc.ListenerFuncs{
				Started: func(string, string) { started.Add(1) },
			}).
			RejectionHandler(func(ctx context.Context, r *groupconc.Rejection) (any, error) {
				kept = r
				if run {
					return r.Run(ctx)
				}
				return nil, groupconc.ErrRejected
			}))
		e := groupconc.New(p)
		release := make(chan struct{})
		first, err := groupconc.Submit(t.Context(), e, "g", "first", func(context.Context) (int, error) {
			<-release
			return 0, nil
		})
		require.NoError(t, err)
		var calls atomic.Int32
		h, err := groupconc.Submit(t.Context(), e, "g", "second", func(context.Context) (int, error) {
			calls.Add(1)
			return 2, nil
		})
		require.NoError(t, err)
		res := h.Wait()
		close(release)
		first.Wait()
		require.NotNil(t, kept)
		wantCalls, wantStarted := calls.Load(), started.Load()

		v, err := kept.Run(t.Context())
		assert.Error(t, err, "Run after the handler returned")
		assert.Nil(t, v)
		assert.Equal(t, wantCalls, calls.Load(), "the task did not run again")
		assert.Equal(t, wantStarted, started.Load(), "no OnStarted after the task completed")
		if run {
			assert.Equal(t, groupconc.StatusSuccess, res.Status)
		} else {
			assert.Equal(t, groupconc.StatusRejected, res.Status)
			assert.Zero(t, wantCalls)
		}
		require.NoError(t, e.Shutdown(t.Context()))
	}
}

// A nil or zero Rejection has no task to run: Run says so.
func TestANilOrZeroRejectionRunsNothing(t *testing.T) {
	for name, r := range map[string]*groupconc.Rejection{"nil": nil, "zero": {}} {
		v, err := r.Run(t.Context())
		assert.ErrorContains(t, err, "no task to run", name)
		assert.Nil(t, v, name)
	}
}
