package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Under fair share, a parent's own tasks stand among its children for the
// global cap as they do at the parent's limit: a child's backlog does not
// hold them back until it drains.
func TestAParentsOwnTasksTakeTheirTurnAtTheGlobalCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().Isolation(groupconc.IsolationFairShare).ParentSeparator("/").
			GlobalMaxInFlight(2).DefaultMaxConcurrencyPerGroup(10))
		f := newFlow(t, e, nil, append(repeat("acme/u1", 6), repeat("acme", 3)...)...)
		synctest.Wait()
		require.Equal(t, map[string]int{"acme/u1": 2}, f.running())
		f.endOldest()
		assert.Equal(t, map[string]int{"acme/u1": 1, "acme": 1}, f.running(), "acme's own task, running none, comes first")
		f.endOldest()
		assert.Equal(t, map[string]int{"acme/u1": 1, "acme": 1}, f.running())
		f.finish(t, e)
	})
}
