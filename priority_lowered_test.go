package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// TestATaskALoweredGlobalCapSendsBackWaitsBehindHigherOnes: under
// IsolationOff a low task holding a global permit while it waits for its
// group goes back to the global line when the cap is lowered. A high task
// already waiting there still comes first.
func TestATaskALoweredGlobalCapSendsBackWaitsBehindHigherOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := func(n int) *groupconc.PolicyBuilder { return builder().GlobalMaxInFlight(n) }
		e := newExecutor(t, b(3))
		ka, kb := newGatedTask(t, 0), newGatedTask(t, 0)
		ra := submit(t, t.Context(), e, "a", "run", ka.Fn)
		var log startLog
		low := submitPrio(t, e, "a", "low", groupconc.PriorityLow, log.task("low"))
		rb := submit(t, t.Context(), e, "b", "run", kb.Fn)
		synctest.Wait()
		high := submitPrio(t, e, "c", "high", groupconc.PriorityHigh, log.task("high"))
		synctest.Wait()
		require.False(t, high.IsDone())
		require.NoError(t, e.UpdatePolicy(mustBuild(t, b(2))))
		synctest.Wait()
		kb.Release() // one global permit is free: the high task's
		synctest.Wait()
		assert.Equal(t, []string{"high"}, log.order(), "the global line served a low task before a high one")
		ka.Release()
		quiesce(t, e, ra, rb, low, high)
	})
}

// TestATaskALoweredBulkheadSendsBackWaitsBehindHigherOnes: a low task
// holding a bulkhead permit while it waits for concurrency goes back to the
// bulkhead line when the bulkhead is lowered, behind a high task there.
func TestATaskALoweredBulkheadSendsBackWaitsBehindHigherOnes(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		loweredSendsBackBehindHigher(t, func(n int) *groupconc.PolicyBuilder {
			return modeBuilder(mode).DefaultMaxInFlightPerGroup(n).DefaultMaxConcurrencyPerGroup(1)
		})
	})
}

// TestATaskALoweredConcurrencySendsBackWaitsBehindHigherOnes: under fair
// share a low task waiting for a global permit goes back to its group's
// line when its limit is lowered, behind a high task there.
func TestATaskALoweredConcurrencySendsBackWaitsBehindHigherOnes(t *testing.T) {
	loweredSendsBackBehindHigher(t, func(n int) *groupconc.PolicyBuilder {
		return builder().Isolation(groupconc.IsolationFairShare).GlobalMaxInFlight(1).DefaultMaxConcurrencyPerGroup(n)
	})
}

// loweredSendsBackBehindHigher runs a task of group "a", then a low one
// that waits past the group's first layer under b(2), then a high one that
// waits at it. Under b(1) the low one goes back, and the high one starts
// first once the running task returns.
func loweredSendsBackBehindHigher(t *testing.T, b func(n int) *groupconc.PolicyBuilder) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, b(2))
		k := newGatedTask(t, 0)
		run := submit(t, t.Context(), e, "a", "run", k.Fn)
		var log startLog
		low := submitPrio(t, e, "a", "low", groupconc.PriorityLow, log.task("low"))
		synctest.Wait()
		high := submitPrio(t, e, "a", "high", groupconc.PriorityHigh, log.task("high"))
		synctest.Wait()
		require.NoError(t, e.UpdatePolicy(mustBuild(t, b(1))))
		synctest.Wait()
		k.Release()
		quiesce(t, e, run, low, high)
		assert.Equal(t, []string{"high", "low"}, log.order())
	})
}
