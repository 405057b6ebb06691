package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/require"
)

// Two tasks of one group, w then m, wait in a shared line. Two tasks
// ending on two goroutines hand that line's permits to them at once. Each
// is carried on to its group's concurrency layer, where one permit is
// free. w must start first, whichever carrier gets there first. The
// interleaving cannot be forced from outside, so many rounds race it.

// TestHandedTasksStartInOrderFlat: w and m wait for a global permit. Under
// IsolationOff that is their first layer.
func TestHandedTasksStartInOrderFlat(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		handedOrderRounds(t, builder().Isolation(mode).GlobalMaxInFlight(2).DefaultMaxConcurrencyPerGroup(1).
			PerGroupMaxInFlight(map[string]int{"x": 1, "y": 1}), "x", "y", "g")
	})
}

// TestHandedTasksStartInOrderTree: w and m wait for their parent's
// bulkhead permits, held by tasks of two other children.
func TestHandedTasksStartInOrderTree(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		handedOrderRounds(t, builder().Isolation(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(1).
			PerGroupMaxConcurrency(map[string]int{"acme": 5}).PerGroupMaxInFlight(map[string]int{"acme": 2}),
			"acme/u2", "acme/u3", "acme/u1")
	})
}

// handedOrderRounds runs the rounds on an executor of b. Tasks of groups
// a and b hold the permits w and m of group g wait for.
func handedOrderRounds(t *testing.T, pb *groupconc.PolicyBuilder, a, b, g string) {
	rounds := 1000
	if testing.Short() {
		rounds = 50
	}
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, pb)
		for round := range rounds {
			gate := make(chan struct{})
			h1 := submit(t, t.Context(), e, a, "s1", gated(gate, 0))
			h2 := submit(t, t.Context(), e, b, "s2", gated(gate, 0))
			synctest.Wait()
			var log startLog
			hw := submit(t, t.Context(), e, g, "w", log.task("w"))
			hm := submit(t, t.Context(), e, g, "m", log.task("m"))
			synctest.Wait()
			close(gate)
			quiesce(t, e, h1, h2, hw, hm)
			require.Equal(t, []string{"w", "m"}, log.order(), "round %d", round)
		}
	})
}
