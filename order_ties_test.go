package groupconc_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// In a bubble every task is submitted at one clock reading. Tasks a
// lowered limit sends back must still wait again oldest first, in the
// order they were submitted, whatever groups or lines they came from.
// Each test runs several bubbles: the order groups are stored in is not
// the same from one executor to the next.

func TestLoweredGlobalSendsBackTasksOfManyGroupsInSubmissionOrder(t *testing.T) {
	for range 8 {
		synctest.Test(t, func(t *testing.T) {
			b := func(global int) *groupconc.PolicyBuilder {
				return groupconc.NewPolicyBuilder().GlobalMaxInFlight(global).DefaultMaxConcurrencyPerGroup(1)
			}
			e := newExecutor(t, b(16))
			g := upNewGated()
			for i := range 8 {
				k := fmt.Sprint("g", i)
				g.submit(t, e, k, k+"/1") // runs
				g.submit(t, e, k, k+"/2") // holds a global permit, waits for k's
				synctest.Wait()
			}
			require.Len(t, g.starts.list(), 8)
			upUpdate(t, e, b(8))
			g.release("g7/1")
			assert.False(t, g.started("g7/2"), "the freed global permit goes to g0/2, first in line again: %v", g.starts.list())
			g.release("g0/1")
			assert.True(t, g.started("g0/2"), "g0/2 holds the global permit: %v", g.starts.list())
			g.finish(t, e)
		})
	}
}

func TestLoweredParentSendsBackTasksOfItsChildrenInSubmissionOrder(t *testing.T) {
	for range 4 {
		upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
			policy := func(bulkhead int) *groupconc.PolicyBuilder {
				return b().ParentSeparator("/").DefaultMaxConcurrencyPerGroup(1).
					PerGroupMaxConcurrency(map[string]int{"t": 1}).
					PerGroupMaxInFlight(map[string]int{"t": bulkhead})
			}
			e := newExecutor(t, policy(8))
			g := upNewGated()
			for _, id := range []string{"u1/1", "u1/2", "u2/1", "u2/2", "u3/1"} {
				g.submit(t, e, "t/"+id[:2], id)
				synctest.Wait()
			}
			require.Equal(t, []string{"u1/1"}, g.starts.list())
			upUpdate(t, e, policy(1))
			g.release("u1/1")
			assert.Equal(t, []string{"u1/1", "u1/2"}, g.starts.list(), "u1/2 was submitted first of those sent back to t's bulkhead: %+v", groupStats(t, e, "t"))
			g.finish(t, e)
		})
	}
}

func TestResumedParentStartsTasksOfItsChildrenInSubmissionOrder(t *testing.T) {
	for range 4 {
		upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
			e := newExecutor(t, b().ParentSeparator("/").DefaultMaxConcurrencyPerGroup(1))
			g := upNewGated()
			for _, id := range []string{"u1/1", "u1/2", "u2/1", "u3/1"} {
				g.submit(t, e, "t/"+id[:2], id)
				synctest.Wait()
			}
			pause(t, e, "t", true)
			g.release("u1/1")
			require.Equal(t, []string{"u1/1"}, g.starts.list())
			pause(t, e, "t", false)
			synctest.Wait()
			assert.Equal(t, []string{"u1/1", "u1/2"}, g.starts.list(), "u1/2 was submitted first of the paused tasks")
			g.finish(t, e)
		})
	}
}

// Of a parent's queue, RejectDiscardOldest displaces the task submitted
// first, though another task, submitted after it, got further along: o
// was held back by its own group's bulkhead, y was not.
func TestDiscardOldestOfAParentsQueueDisplacesTheFirstSubmitted(t *testing.T) {
	for range 4 {
		upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
			e := newExecutor(t, b().ParentSeparator("/").RejectionPolicy(groupconc.RejectDiscardOldest).
				PerGroupMaxInFlight(map[string]int{"g": 2, "g/c1": 1}).
				PerGroupMaxConcurrency(map[string]int{"g": 1}).
				PerGroupQueueThreshold(map[string]int{"g": 2}))
			g := upNewGated()
			g.submit(t, e, "g/c3", "x") // runs
			h := g.submit(t, e, "g/c1", "h")
			g.submit(t, e, "g/c1", "o") // waits for c1's bulkhead
			g.submit(t, e, "g/c2", "y") // waits for g's bulkhead
			synctest.Wait()
			require.True(t, h.Cancel())
			delete(g.hs, "h")
			synctest.Wait() // y waits for g's concurrency, o for g's bulkhead
			require.Equal(t, []string{"x"}, g.starts.list())
			g.submit(t, e, "g/c4", "n")
			synctest.Wait()
			requireDoneDisplaced(t, g.hs["o"], "o was submitted before y")
			g.finish(t, e)
		})
	}
}

// Limits raised for many groups at once hand each group's waiting task a
// permit. Under fair share they walk on to the global layer oldest first,
// whatever order the groups are stored in: so the one global permit free
// goes to the oldest. (Tasks of groups with no parent tie in age under
// fair share at one clock reading, so each group's come a second later.)
func TestRaisedLimitsOfManyGroupsLetTheOldestTakeTheFreeGlobalPermit(t *testing.T) {
	for range 4 {
		synctest.Test(t, func(t *testing.T) {
			b := func(limit int) *groupconc.PolicyBuilder {
				return modeBuilder(groupconc.IsolationFairShare).GlobalMaxInFlight(9).DefaultMaxConcurrencyPerGroup(limit)
			}
			e := newExecutor(t, b(1))
			g := upNewGated()
			for i := range 8 {
				k := fmt.Sprint("g", i)
				g.submit(t, e, k, k+"/1") // runs
				g.submit(t, e, k, k+"/2") // waits for k's limit
				synctest.Wait()
				time.Sleep(time.Second) // fake clock: each group's tasks are younger
			}
			require.Len(t, g.starts.list(), 8)
			upUpdate(t, e, b(2))
			synctest.Wait()
			assert.Equal(t, 9, len(g.starts.list()), "one global permit was free: %v", g.starts.list())
			assert.True(t, g.started("g0/2"), "the oldest takes it: %v", g.starts.list())
			g.finish(t, e)
		})
	}
}
