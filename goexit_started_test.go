package groupconc_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A listener whose OnStarted calls runtime.Goexit for a task that a
// rejection handler runs through Rejection.Run leaves no lock held: the
// task ends FAILED and the executor shuts down.
func TestAGoexitInOnStartedOfARejectedTaskRunByItsHandler(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			b := modeBuilder(mode).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).
				RejectionHandler(func(ctx context.Context, r *groupconc.Rejection) (any, error) { return r.Run(ctx) }).
				TaskLifecycleListener(groupconc.ListenerFuncs{Started: func(_, id string) {
					if id == "turned away" {
						runtime.Goexit()
					}
				}})
			e := newExecutor(t, b)
			hold := newGatedTask(t, 0)
			h0 := submit(t, t.Context(), e, "a", "hold", hold.Fn)
			synctest.Wait()
			h := submit(t, t.Context(), e, "a", "turned away", succeed)
			hold.Release()
			h0.Wait()
			r, err := h.Await(t.Context())
			require.NoError(t, err, "its handle completes")
			assert.Equal(t, groupconc.StatusFailed, r.Status)
			require.NoError(t, e.Shutdown(t.Context()))
		})
	})
}
