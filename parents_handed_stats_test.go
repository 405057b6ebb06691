package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// A parent's own tasks, one of cost 2 and later one above its limit, and
// its subtree's tasks handed its permits as others end: at each quiet
// point its counts cover its subtree, RunningCost in permits held at it.
func TestAParentsCountsFollowItsOwnCostlyTasksAndPermitsHandedToItsSubtree(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b().ParentSeparator("/").DefaultMaxConcurrencyPerGroup(5).
			PerGroupMaxConcurrency(map[string]int{"t": 3, "t/u": 2}))
		g := upNewGated()
		ks, hs := g.tasks, g.hs
		sub := func(key, id string, cost int) {
			g.submitWith(t, e, key, id, groupconc.SubmitOptions{Cost: cost})
		}
		want := func(step string, w map[string]counts) {
			synctest.Wait()
			for key, c := range w {
				assert.Equal(t, c, countsOf(groupStats(t, e, key)), "%s: %s", step, key)
			}
		}
		sub("t", "a", 1)
		sub("t", "b", 2)
		sub("t/u", "c", 1)   // waits for t's limit
		sub("t/u/x", "d", 1) // too
		want("submitted", map[string]counts{"t": {2, 3, 2, 0, 4, 0}, "t/u": {0, 0, 2, 0, 2, 0}})
		ks["a"].Release() // t's permit goes to c
		want("a ended", map[string]counts{"t": {2, 3, 1, 0, 3, 0}, "t/u": {1, 1, 1, 0, 2, 0}, "t/u/x": {0, 0, 1, 0, 1, 0}})
		ks["b"].Release() // to d
		want("b ended", map[string]counts{"t": {2, 2, 0, 0, 2, 0}, "t/u": {2, 2, 0, 0, 2, 0}, "t/u/x": {1, 1, 0, 0, 1, 0}})
		sub("t", "g", 5) // takes all 3 of t's permits once they are free
		want("g waits", map[string]counts{"t": {2, 2, 1, 0, 3, 0}})
		ks["c"].Release()
		ks["d"].Release()
		want("g runs", map[string]counts{"t": {1, 3, 0, 0, 1, 0}, "t/u": {}, "t/u/x": {}})
		ks["g"].Release()
		quiesce(t, e, hs["a"], hs["b"], hs["c"], hs["d"], hs["g"])
	})
}
