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

// A task turned away under RejectCallerRuns whose context ends as its
// goroutine begins ends CANCELLED, and its function never runs.
func TestACallerRunsTaskWhoseContextEndsFirstRunsNothing(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		e := newExecutor(t, modeBuilder(mode).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).
			RejectionPolicy(groupconc.RejectCallerRuns))
		release := make(chan struct{})
		first := submit(t, t.Context(), e, "a", "first", func(context.Context) (int, error) { <-release; return 0, nil })
		ctx, cancel := context.WithCancel(t.Context())
		groupconc.OnRunRejected(t, func(string) { cancel() })
		var ran atomic.Bool
		h := submit(t, ctx, e, "a", "x", func(context.Context) (int, error) { ran.Store(true); return 1, nil })
		r := h.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.ErrorIs(t, r.Err, context.Canceled)
		close(release)
		first.Wait()
		require.NoError(t, e.Shutdown(t.Context()))
		assert.False(t, ran.Load(), "the function ran")
	})
}
