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
		g := upNewGated()
		hs := g.hs
		sub := func(key, id string, p groupconc.Priority) {
			g.submitWith(t, e, key, id, groupconc.SubmitOptions{Priority: p})
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
		for _, k := range g.tasks {
			k.Release()
		}
		quiesce(t, e, hs["x"], hs["z"], hs["n"], hs["k"])
	})
}

// A parent's line holds its subtree's tasks in the order they reached it.
// o, held back by its own group's limit, reached the parent's line after
// y, submitted after it. RejectDiscardOldest still displaces o, the first
// submitted: two levels, and three, where the newcomer is the top group's
// own task.
func TestDiscardOldestOfAParentsLineDisplacesTheFirstSubmittedThoughItCameLater(t *testing.T) {
	for _, k := range []struct{ top, held, runs, other, late string }{
		{"g", "g/c1", "g/c3", "g/c2", "g/c4"},
		{"org", "org/t/u", "org/s", "org/t/v", "org"},
	} {
		upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
			policy := func(held int) *groupconc.PolicyBuilder {
				return b().ParentSeparator("/").RejectionPolicy(groupconc.RejectDiscardOldest).
					PerGroupMaxConcurrency(map[string]int{k.top: 2, k.held: held}).DefaultMaxConcurrencyPerGroup(5).
					PerGroupQueueThreshold(map[string]int{k.top: 2})
			}
			e := newExecutor(t, policy(1))
			g := upNewGated()
			g.submit(t, e, k.held, "x")  // runs
			g.submit(t, e, k.runs, "z")  // runs: the top group is full
			g.submit(t, e, k.held, "o")  // waits for its own group's limit
			g.submit(t, e, k.other, "y") // waits for the top group's
			synctest.Wait()
			upUpdate(t, e, policy(2)) // o moves on to the top group's line, behind y
			synctest.Wait()
			require.Equal(t, 2, groupStats(t, e, k.held).Running+groupStats(t, e, k.runs).Running)
			require.Equal(t, k.top, position(t, g.hs["o"]).Group)
			g.submit(t, e, k.late, "n")
			synctest.Wait()
			requireDoneDisplaced(t, g.hs["o"], "o was submitted before y")
			assert.False(t, g.hs["y"].IsDone(), "y ended")
			g.finish(t, e)
		})
	}
}

// Three levels: w of t/m/u, accepted in u's queue, moves on to t/m's line
// once t/m's limit was lowered, and waits there. t/m's queue has no slots,
// so w keeps u's one. A new task of u displaces w, looked for in t/m's
// line.
func TestDiscardOldestFindsAGrandchildsTaskInItsParentsLine(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		policy := func(m int) *groupconc.PolicyBuilder {
			return b().ParentSeparator("/").RejectionPolicy(groupconc.RejectDiscardOldest).
				DefaultMaxConcurrencyPerGroup(5).PerGroupMaxConcurrency(map[string]int{"t/m": m, "t/m/u": 1}).
				DefaultQueueThresholdPerGroup(0).PerGroupQueueThreshold(map[string]int{"t/m/u": 1})
		}
		e := newExecutor(t, policy(2))
		g := upNewGated()
		g.submit(t, e, "t/m/v", "x") // runs
		g.submit(t, e, "t/m/u", "a") // runs
		g.submit(t, e, "t/m/u", "w") // waits for u's limit
		synctest.Wait()
		upUpdate(t, e, policy(1))
		g.release("a")
		require.Equal(t, "t/m", position(t, g.hs["w"]).Group)
		g.submit(t, e, "t/m/u", "n")
		synctest.Wait()
		requireDoneDisplaced(t, g.hs["w"], "w holds u's one slot")
		g.finish(t, e)
	})
}
