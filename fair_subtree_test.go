package groupconc_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// fairOnly is upModes for fair share alone.
func fairOnly(t *testing.T, f func(t *testing.T, b func() *groupconc.PolicyBuilder)) {
	upIn(t, []groupconc.IsolationMode{groupconc.IsolationFairShare}, f)
}

// submitIDs submits each id ("key#n") as a gated task, in order.
func submitIDs(t *testing.T, e *groupconc.GroupExecutor, g *upGated, ids ...string) {
	for _, id := range ids {
		g.submit(t, e, strings.Split(id, "#")[0], id)
		synctest.Wait()
	}
}

// At the global cap a tenant's share counts what its children hold, even
// while only top-level groups' own tasks wait for a permit.
func TestFairShareCountsATenantsChildrenWhenOnlyTopLevelTasksWait(t *testing.T) {
	fairOnly(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b().ParentSeparator("/").DefaultMaxConcurrencyPerGroup(groupconc.Unlimited).GlobalMaxInFlight(4))
		g := upNewGated()
		submitIDs(t, e, g, "a/x1#1", "a/x2#1", "a/x3#1", "b#1", "b#2", "a#1")
		g.release("a/x1#1")
		assert.Equal(t, []string{"a/x1#1", "a/x2#1", "a/x3#1", "b#1", "b#2"}, g.starts.list(), "a's subtree holds 2 permits, b 1")
		g.finish(t, e)
	})
}

// When a tenant and a top-level group hold as many global permits, the
// freed one goes to the task that has waited longest.
func TestFairShareTiesWithATenantGoToTheOldestWaiter(t *testing.T) {
	fairOnly(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b().ParentSeparator("/").DefaultMaxConcurrencyPerGroup(groupconc.Unlimited).GlobalMaxInFlight(3))
		g := upNewGated()
		submitIDs(t, e, g, "b#3", "a/y#4", "a/x#5", "b#6", "a#7")
		g.release("a/x#5")
		assert.Equal(t, []string{"b#3", "a/y#4", "a/x#5", "b#6"}, g.starts.list(), "a and b hold one each; b#6 waited longest")
		g.finish(t, e)
	})
}

// At a parent's limit its own tasks are a sharer like each child: the
// permit freed goes to the child that holds none, though the parent's
// own waiting task is older.
func TestAParentsOwnTasksShareItsLimitWithItsChildren(t *testing.T) {
	for _, global := range []int{groupconc.Unlimited, 100} {
		t.Run(fmt.Sprint("global=", global), func(t *testing.T) {
			fairOnly(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
				e := newExecutor(t, b().ParentSeparator("/").DefaultMaxConcurrencyPerGroup(groupconc.Unlimited).
					PerGroupMaxConcurrency(map[string]int{"t": 2}).GlobalMaxInFlight(global))
				g := upNewGated()
				submitIDs(t, e, g, "t#1", "t#2", "t#3", "t/x#1")
				g.release("t#1")
				assert.Equal(t, []string{"t#1", "t#2", "t/x#1"}, g.starts.list())
				g.finish(t, e)
			})
		})
	}
}

// A raised parent limit hands out several permits at once, and each
// choice sees the ones before it. t/x holds 1 of t's limit and t's own
// tasks none. Raised from 1 to 3, the first permit goes to t#1. Then both
// hold 1, and the tie goes to t/x#2, which has waited longest.
func TestARaisedParentLimitCountsEachPermitItHandsToItsOwnTasks(t *testing.T) {
	for _, how := range []string{"UpdatePolicy", "SetGroupOverride"} {
		t.Run(how, func(t *testing.T) {
			fairOnly(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
				policy := func(n int) *groupconc.PolicyBuilder {
					return b().ParentSeparator("/").DefaultMaxConcurrencyPerGroup(groupconc.Unlimited).
						PerGroupMaxConcurrency(map[string]int{"t": n})
				}
				e := newExecutor(t, policy(1))
				g := upNewGated()
				submitIDs(t, e, g, "t/x#1", "t/x#2", "t#1", "t#2")
				if how == "UpdatePolicy" {
					upUpdate(t, e, policy(3))
				} else {
					n := 3
					require.NoError(t, e.SetGroupOverride("t", groupconc.GroupOverride{MaxConcurrency: &n}))
				}
				synctest.Wait()
				assert.ElementsMatch(t, []string{"t/x#1", "t#1", "t/x#2"}, g.starts.list())
				g.finish(t, e)
			})
		})
	}
}
