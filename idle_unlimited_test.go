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

// A TTL changed by UpdatePolicy counts a group's idle time from its last
// task, not from the change: only a TTL turned on starts the count again.
// Idle for 61s, twice the new TTL of 30s, the group is gone.
func TestIdleGroupTTLChangedByUpdatePolicyKeepsTheIdleTimeSoFar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().IdleGroupTTL(time.Minute))
		quiesce(t, e, submit(t, t.Context(), e, "a", "0", succeed))
		time.Sleep(40 * time.Second) // fake clock
		upUpdate(t, e, groupconc.NewPolicyBuilder().IdleGroupTTL(30*time.Second))
		time.Sleep(21 * time.Second)
		assert.Equal(t, 0, e.Stats().Groups, "idle for 61s, twice the TTL and more")
	})
}
