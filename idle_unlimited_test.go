package groupconc_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// A group whose limits are all Unlimited holds no permit of its own while
// its task runs: the task still keeps it from being forgotten.
func TestARunningGroupWithoutLimitsIsNeverForgotten(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).IdleGroupTTL(idleTTL).
				DefaultMaxConcurrencyPerGroup(groupconc.Unlimited).GlobalMaxInFlight(4))
			run := newGatedTask(t, 0)
			h := submit(t, t.Context(), e, "a", "runs", run.Fn)
			synctest.Wait()
			for range 20 {
				time.Sleep(idleTTL)
				e.Stats()
			}
			gs, ok := e.GroupStats("a")
			if assert.True(t, ok, "forgotten while its task runs") {
				assert.Equal(t, 1, gs.Running)
			}
			run.Release()
			quiesce(t, e, h)
		})
	})
}
