package groupconc_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Under fair share a costly task the fair choice fell on stays chosen
// until it starts, so a task of higher priority behind it waits, and
// Position says it waits behind it: at the global line, and at a parent's
// line among a child's tasks.
func TestPositionCountsTheChosenCostlyTaskAhead(t *testing.T) {
	lowest := groupconc.SubmitOptions{Cost: 3, Priority: groupconc.PriorityLowest}
	highest := groupconc.SubmitOptions{Priority: groupconc.PriorityHighest}
	for _, tc := range []struct {
		name, other, key, limit string
		b                       func() *groupconc.PolicyBuilder
	}{
		{"global line", "x", "g", "global", func() *groupconc.PolicyBuilder {
			return groupconc.NewPolicyBuilder().GlobalMaxInFlight(3).DefaultMaxConcurrencyPerGroup(10)
		}},
		{"a parent's line", "t/u1", "t/u0", "group", func() *groupconc.PolicyBuilder {
			return groupconc.NewPolicyBuilder().ParentSeparator("/").DefaultMaxConcurrencyPerGroup(10).PerGroupMaxConcurrency(map[string]int{"t": 3})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upIn(t, []groupconc.IsolationMode{groupconc.IsolationFairShare}, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
				e := newExecutor(t, tc.b().Isolation(groupconc.IsolationFairShare))
				g := upNewGated()
				g.submit(t, e, tc.other, "a") // holds one of the three
				costly := g.submitWith(t, e, tc.key, "costly", lowest)
				urgent := g.submitWith(t, e, tc.key, "urgent", highest)
				require.False(t, g.started("urgent"), "urgent started past the chosen costly task")
				pc, ok := costly.Position()
				require.True(t, ok)
				pu, ok := urgent.Position()
				require.True(t, ok)
				assert.Equal(t, 0, pc.Ahead, "costly: %+v", pc)
				assert.Equal(t, 1, pu.Ahead, "urgent: %+v", pu)
				g.release("a")
				assert.True(t, g.started("costly"))
				g.finish(t, e)
			})
		})
	}
}
