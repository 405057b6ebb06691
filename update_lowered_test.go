package groupconc_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

func TestUpdatePolicyLoweredBulkheadStartsNoTaskPastItUntilInFlightIsBelowIt(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b().DefaultMaxConcurrencyPerGroup(3).DefaultMaxInFlightPerGroup(6))
		g := upNewGated()
		for i := range 6 {
			g.submit(t, e, "a", fmt.Sprint(i))
			synctest.Wait()
		}
		require.EqualValues(t, 3, g.running.cur.Load())
		upUpdate(t, e, b().DefaultMaxConcurrencyPerGroup(3).DefaultMaxInFlightPerGroup(2))
		g.release("0")
		assert.EqualValues(t, 2, g.running.cur.Load(), "running after 0 ended, bulkhead 2: %+v", groupStats(t, e, "a"))
		g.finish(t, e)
	})
}

func TestFairShareLoweredConcurrencyStartsNoTaskHoldingAnOldPermitUntilRunningIsBelowIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := func() *groupconc.PolicyBuilder {
			return groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).GlobalMaxInFlight(2).PerGroupMaxConcurrency(map[string]int{"a": 3})
		}
		e := newExecutor(t, b())
		g := upNewGated()
		for _, id := range []string{"x0", "a0", "a1", "a2"} {
			g.submit(t, e, id[:1], id)
			synctest.Wait()
		}
		require.Equal(t, []string{"x0", "a0"}, g.starts.list())
		upUpdate(t, e, b().PerGroupMaxConcurrency(map[string]int{"a": 1}))
		g.release("x0")
		assert.Equal(t, []string{"x0", "a0"}, g.starts.list(), "a has 1 running, new limit 1: %+v", groupStats(t, e, "a"))
		g.finish(t, e)
	})
}

// A lowered limit sends back a task that holds its permit and waits
// further along. That task gave back the slot of the queue it waited on.
// It must keep one: else, handed its permits again, it could find a
// queue of no slots where it next waited, and be turned away after Submit
// had accepted it. A lowered limit drains and never interrupts, and under
// fair share every rejection happens inside Submit.
func TestATaskALoweredLimitSendsBackKeepsASlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := func(tInFlight, tQueue int) *groupconc.PolicyBuilder {
			return builder().Isolation(groupconc.IsolationFairShare).ParentSeparator("/").GlobalMaxInFlight(1).
				DefaultQueueThresholdPerGroup(0).
				PerGroupQueueThreshold(map[string]int{"t": tQueue, "u": groupconc.Unlimited}).
				PerGroupMaxConcurrency(map[string]int{"t": 1}).
				PerGroupMaxInFlight(map[string]int{"t": tInFlight})
		}
		e := newExecutor(t, b(groupconc.Unlimited, groupconc.Unlimited))
		run, other := newGatedTask(t, 0), newGatedTask(t, 1)
		hr := submitGated(t, e, "t", "run", run, groupconc.SubmitOptions{})
		synctest.Wait()
		ho := submitGated(t, e, "u", "other", other, groupconc.SubmitOptions{}) // waits for the global cap
		hw := submit(t, t.Context(), e, "t/b", "w", succeed)                    // waits at t's limit, on t's slot
		synctest.Wait()
		upUpdate(t, e, b(1, 0)) // t's bulkhead 1 sends w back to it; t's queue has no slots now
		run.Release()           // other takes the global permit; w takes t's, and waits for the global one
		synctest.Wait()
		require.False(t, hw.IsDone(), "w waits for the global permit")
		other.Release()
		assert.Equal(t, groupconc.StatusSuccess, hw.Wait().Status)
		quiesce(t, e, hr, ho, hw)
	})
}

// A task that a lowered limit sends back to its own group's line, from a
// parent's line, holds a slot of its group's queue there again. With u1's
// threshold 1 that slot fills the queue, so a new task of u1 is turned
// away, in both modes.
func TestATaskSentBackToItsGroupsLineHoldsASlotOfItsQueue(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			policy := func(u1 int) *groupconc.PolicyBuilder {
				return modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(5).
					PerGroupMaxConcurrency(map[string]int{"acme": 1, "acme/u1": u1}).
					PerGroupQueueThreshold(map[string]int{"acme/u1": 1})
			}
			e := newExecutor(t, policy(2))
			ks, hs := submitEach(t, e, "acme/u1", "acme/u1")
			synctest.Wait()
			require.True(t, ks[0].started.Load())
			requireWaiting(t, hs[1], ks[1])
			require.Equal(t, "acme", position(t, hs[1]).Group, "it holds u1's permit")

			require.NoError(t, e.UpdatePolicy(mustBuild(t, policy(1))))
			synctest.Wait()
			requireWaiting(t, hs[1], ks[1])
			require.Equal(t, "acme/u1", position(t, hs[1]).Group, "sent back to u1's line")
			late := submit(t, context.Background(), e, "acme/u1", "late", succeed)
			synctest.Wait()
			assert.Equal(t, groupconc.ReasonGroupQueueFull, requireRejected(t, late, "group").Reason)

			ks[0].Release()
			synctest.Wait()
			assert.True(t, ks[1].started.Load())
			releaseAll(t, e, ks, append(hs, late))
		})
	})
}
