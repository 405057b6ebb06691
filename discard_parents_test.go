package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// c, a child's task waiting for its parent's limit, was submitted before
// o, the parent's own, at one clock reading: RejectDiscardOldest of the
// parent's queue displaces c, the oldest.
func TestDiscardOldestOfAParentsQueuePrefersAChildsOlderTaskToTheParentsOwn(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b().ParentSeparator("/").RejectionPolicy(groupconc.RejectDiscardOldest).
			DefaultMaxConcurrencyPerGroup(5).PerGroupMaxConcurrency(map[string]int{"t": 1}).
			PerGroupQueueThreshold(map[string]int{"t": 2}))
		g := upNewGated()
		g.submit(t, e, "t/c", "r") // runs
		g.submit(t, e, "t/c", "c") // waits for t's limit
		g.submit(t, e, "t", "o")   // waits for t's limit
		synctest.Wait()
		require.Equal(t, "t", position(t, g.hs["c"]).Group)
		require.Equal(t, "t", position(t, g.hs["o"]).Group)
		g.submit(t, e, "t/d", "n")
		synctest.Wait()
		r := doneResult(t, g.hs["c"])
		require.Equal(t, groupconc.StatusRejected, r.Status, "c was submitted before o")
		assert.False(t, g.hs["o"].IsDone(), "o ended")
		g.finish(t, e)
	})
}

// In a parent's line, RejectDiscardOldest takes the oldest task of the
// lowest priority at or below the newcomer's: o, held back by c1's limit,
// came after y but was submitted first.
func TestDiscardOldestOfAParentsLineTakesTheOldestOfTheLowestPriority(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		policy := func(c1 int) *groupconc.PolicyBuilder {
			return b().ParentSeparator("/").RejectionPolicy(groupconc.RejectDiscardOldest).
				PerGroupMaxConcurrency(map[string]int{"t": 2, "t/c1": c1}).DefaultMaxConcurrencyPerGroup(5).
				PerGroupQueueThreshold(map[string]int{"t": 2})
		}
		e := newExecutor(t, policy(1))
		ks := map[string]*gatedTask{}
		hs := map[string]*groupconc.TaskHandle[int]{}
		sub := func(key, id string, p groupconc.Priority) {
			ks[id] = newGatedTask(t, 0)
			hs[id] = submitGated(t, e, key, id, ks[id], groupconc.SubmitOptions{Priority: p})
			synctest.Wait()
		}
		sub("t/c1", "x", 0)
		sub("t/c3", "z", 0)
		sub("t/c1", "o", groupconc.PriorityLow)
		sub("t/c2", "y", groupconc.PriorityLow)
		upUpdate(t, e, policy(2))
		synctest.Wait()
		require.Equal(t, "t", position(t, hs["o"]).Group)
		sub("t/c4", "m", groupconc.PriorityLowest)
		requireRejected(t, hs["m"], "group")
		sub("t/c4", "n", groupconc.PriorityNormal)
		require.Equal(t, groupconc.StatusRejected, doneResult(t, hs["o"]).Status, "o was submitted before y")
		sub("t", "k", groupconc.PriorityLow)
		require.Equal(t, groupconc.StatusRejected, doneResult(t, hs["y"]).Status)
		assert.False(t, hs["n"].IsDone())
		assert.False(t, hs["k"].IsDone())
		for _, k := range ks {
			k.Release()
		}
		quiesce(t, e, hs["x"], hs["z"], hs["n"], hs["k"])
	})
}

// Three levels: o, of a grandchild held back by its own limit, reached
// org's line after y; a task of org itself displaces o.
func TestDiscardOldestOfAGrandparentsLineDisplacesTheFirstSubmitted(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		policy := func(u int) *groupconc.PolicyBuilder {
			return b().ParentSeparator("/").RejectionPolicy(groupconc.RejectDiscardOldest).
				PerGroupMaxConcurrency(map[string]int{"org": 2, "org/t/u": u}).DefaultMaxConcurrencyPerGroup(5).
				PerGroupQueueThreshold(map[string]int{"org": 2})
		}
		e := newExecutor(t, policy(1))
		g := upNewGated()
		g.submit(t, e, "org/t/u", "x")
		g.submit(t, e, "org/s", "z")
		g.submit(t, e, "org/t/u", "o")
		g.submit(t, e, "org/t/v", "y")
		synctest.Wait()
		upUpdate(t, e, policy(2))
		synctest.Wait()
		require.Equal(t, "org", position(t, g.hs["o"]).Group)
		g.submit(t, e, "org", "n")
		synctest.Wait()
		require.Equal(t, groupconc.StatusRejected, doneResult(t, g.hs["o"]).Status, "o was submitted before y")
		assert.False(t, g.hs["y"].IsDone())
		g.finish(t, e)
	})
}
