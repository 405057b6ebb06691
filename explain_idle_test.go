package groupconc_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A group idle for twice the TTL is gone for ExplainGroup and the override
// calls as it is for GroupStats, whichever is called first. Otherwise
// SetGroupOverride would take an override that the next GroupStats forgets
// with the group.
func TestExplainAndOverridesForgetAGroupIdleForTwiceTheTTL(t *testing.T) {
	five := 5
	for _, via := range []string{"ExplainGroup", "SetGroupOverride", "GroupOverride", "GroupOverrides"} {
		t.Run(via, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, builder().ParentSeparator("/").IdleGroupTTL(idleTTL))
				quiesce(t, e, submit(t, t.Context(), e, "t/a", "0", succeed))
				require.NoError(t, e.SetGroupOverride("t/a", groupconc.GroupOverride{MaxConcurrency: &five}))
				time.Sleep(2 * idleTTL) // fake clock; no call meanwhile looks for idle groups
				switch via {
				case "ExplainGroup":
					_, ok := e.ExplainGroup("t/a")
					assert.False(t, ok, "ExplainGroup of a group idle for 2×TTL")
					_, ok = e.ExplainGroup("t")
					assert.False(t, ok, "ExplainGroup of its idle parent")
				case "SetGroupOverride":
					err := e.SetGroupOverride("t", groupconc.GroupOverride{MaxConcurrency: &five})
					assert.ErrorIs(t, err, groupconc.ErrUnknownGroup, "an override of a group idle for 2×TTL")
				case "GroupOverride":
					_, ok := e.GroupOverride("t/a")
					assert.False(t, ok, "the override of a group idle for 2×TTL")
				case "GroupOverrides":
					for k := range e.GroupOverrides() {
						assert.Fail(t, "an override of a group idle for 2×TTL is listed", k)
					}
				}
				assert.Empty(t, idleKeys(e))
			})
		})
	}
}
