package groupconc_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Where a limit of 1 binds, no group holds a permit when the next is
// given out, so every group with work ties. A tie goes to the task that
// has waited longest, at every level of a tree as in a flat line. So the
// tasks start in the order they were submitted, whatever their groups.
func TestTreeTiesGoToTheTaskThatHasWaitedLongest(t *testing.T) {
	// Each id is the task's key and a number (submitIDs).
	cases := []struct {
		name   string
		policy func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder
		ids    []string
	}{
		{"a tenant's limit", func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
			return b.PerGroupMaxConcurrency(map[string]int{"t": 1})
		}, []string{"t/u1#1", "t/u2#1", "t/u1#2", "t/u2#2", "t/u1#3", "t#1", "t/u2#3", "t#2"}},
		{"the global cap", func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
			return b.GlobalMaxInFlight(1)
		}, []string{"a/x#1", "b/y#1", "a/z#1", "a/x#2", "b/y#2", "a#1", "b/z#1", "a/z#2", "a/x#3", "b#1", "a#2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
				e := newExecutor(t, c.policy(b().ParentSeparator("/").DefaultMaxConcurrencyPerGroup(8)))
				g := upNewGated()
				submitIDs(t, e, g, c.ids...)
				for i := range c.ids {
					starts := g.starts.list()
					require.Len(t, starts, i+1, "one task runs at a time")
					g.release(starts[i])
				}
				assert.Equal(t, c.ids, g.starts.list())
				g.finish(t, e)
			})
		})
	}
}
