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

// A lowered limit sends the tasks that hold its permit back to its line,
// ahead of those waiting there. Under fair share the choice made among
// those before is made again. Here the costly t/a#4 waited alone at t's
// bulkhead and was chosen. The override lowering it sends back t/a#3,
// older, and t#2: the freed bulkhead goes to the fairest of them, and
// never to t/a#4 ahead of t/a#3.
func TestALoweredParentLimitChoosesAgainAmongTheTasksItSendsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := builder().Isolation(groupconc.IsolationFairShare).ParentSeparator("/").GlobalMaxInFlight(1).
			PerGroupMaxConcurrency(map[string]int{"t": 3, "t/a": 1, "t/b": 3}).
			PerGroupMaxInFlight(map[string]int{"t": 5, "t/a": 4})
		e := newExecutor(t, b)
		keys := []string{"t/a", "t/b", "t", "t/a", "t/a"}
		opts := []groupconc.SubmitOptions{{}, {Cost: 2}, {Priority: groupconc.PriorityHigh}, {}, {Cost: 2}}
		ks := make([]*gatedTask, len(keys))
		hs := make([]*groupconc.TaskHandle[int], len(keys))
		for i, key := range keys {
			ks[i] = newGatedTask(t, i)
			hs[i] = submitGated(t, e, key, "", ks[i], opts[i])
		}
		synctest.Wait()
		ks[0].Release() // t/a#3 walks on to t's limit, t/a#4 waits at t's bulkhead
		synctest.Wait()
		one := 1
		require.NoError(t, e.SetGroupOverride("t", groupconc.GroupOverride{MaxInFlight: &one}))
		ks[1].Release() // frees t's bulkhead and the global permit
		synctest.Wait()
		assert.False(t, ks[4].started.Load(), "t/a#3, older, still waits")
		for _, k := range ks {
			k.Release()
		}
		quiesce(t, e, hs...)
	})
}
