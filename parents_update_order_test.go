package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// "A raised limit starts the waiting tasks that now fit at once, in their
// order." t (limit 2, bulkhead 2) runs x of t/a and y of t/b. k3 of t/b
// waits at t's bulkhead, k4 of t/b at t/b's bulkhead (2). UpdatePolicy
// raises t's limit to 3 and lifts the bulkheads: both walk on, and the one
// free permit of t goes to k3, submitted first. Each change hands k4 its
// permit as readily as k3 its own, and whichever was handed one first took
// their group's turn, and t's permit, about half the time.
func TestARaisedParentLimitStartsTheOlderOfTwoTasksHandedPermits(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		build := func(tConc, bulk int) *groupconc.PolicyBuilder {
			return modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(3).
				PerGroupMaxConcurrency(map[string]int{"t": tConc}).DefaultMaxInFlightPerGroup(bulk)
		}
		for range 30 {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, build(2, 2))
				ks := []*gatedTask{newGatedTask(t, 0), newGatedTask(t, 1), newGatedTask(t, 3), newGatedTask(t, 4)}
				var hs []*groupconc.TaskHandle[int]
				for i, key := range []string{"t/a", "t/b", "t/b", "t/b"} {
					hs = append(hs, submitGated(t, e, key, "", ks[i], groupconc.SubmitOptions{}))
					synctest.Wait()
				}
				require.NoError(t, e.UpdatePolicy(mustBuild(t, build(3, groupconc.Unlimited))))
				synctest.Wait()
				assert.True(t, ks[2].started.Load(), "k3 was submitted first")
				assert.False(t, ks[3].started.Load(), "t's limit is full")
				for _, k := range ks {
					k.Release()
				}
				quiesce(t, e, hs...)
			})
		}
	})
}
