package groupconc_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// OnCompleted returns before the handle completes, whichever way the task
// ended, so a caller that waited for it finds its listener told.
func TestOnCompletedHasReturnedWhenTheHandleCompletes(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, end := range []string{"succeeded", "failed", "panicked", "cancelled waiting", "ran as the caller"} {
			t.Run(end, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					hold := make(chan struct{})
					e := newExecutor(t, builder().Isolation(mode).
						DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(1).
						RejectionPolicy(groupconc.RejectCallerRuns).
						TaskLifecycleListener(groupconc.ListenerFuncs{
							Completed: func(g, _ string, _ groupconc.GroupResult[any]) {
								if g == "held" {
									<-hold
								}
							},
						}))
					h := completedBy(t, e, end)
					synctest.Wait() // the task's goroutine is in OnCompleted
					require.False(t, h.IsDone(), "the handle completed before OnCompleted returned")
					close(hold)
					<-h.Done()
				})
			})
		}
	})
}

// completedBy has a task of group "held" end as end says, and returns it.
func completedBy(t *testing.T, e *groupconc.GroupExecutor, end string) *groupconc.TaskHandle[int] {
	t.Helper()
	switch end {
	case "succeeded":
		return submit(t, t.Context(), e, "held", "a", succeed)
	case "failed":
		return submit(t, t.Context(), e, "held", "a", func(context.Context) (int, error) { return 0, errBoom })
	case "panicked":
		return submit(t, t.Context(), e, "held", "a", func(context.Context) (int, error) { panic("boom") })
	}
	k := newGatedTask(t, 1)
	t.Cleanup(k.Release)
	submit(t, t.Context(), e, "held", "running", k.Fn)
	if end == "cancelled waiting" {
		ctx, cancel := context.WithCancel(t.Context())
		h := submit(t, ctx, e, "held", "a", succeed)
		synctest.Wait()
		cancel()
		return h
	}
	submit(t, t.Context(), e, "held", "waiting", succeed) // the queue is full now
	return submit(t, t.Context(), e, "held", "a", succeed)
}

func TestAListenerThatCallsGoexitInOnCompletedStillCompletesTheHandle(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1).
				TaskLifecycleListener(groupconc.ListenerFuncs{
					Completed: func(string, string, groupconc.GroupResult[any]) { runtime.Goexit() },
				}))
			h := submit(t, t.Context(), e, "g", "a", succeed)
			next := submit(t, t.Context(), e, "g", "b", succeed)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			r, err := h.Await(ctx)
			require.NoError(t, err, "the handle never completed")
			assert.Equal(t, groupconc.StatusSuccess, r.Status)
			r, err = next.Await(ctx)
			require.NoError(t, err, "the task behind it never got the permit")
			assert.Equal(t, groupconc.StatusSuccess, r.Status)
			synctest.Wait()
			assert.NoError(t, e.Quiescent())
		})
	})
}
