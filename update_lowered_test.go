package groupconc_test

import (
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
