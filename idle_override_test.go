package groupconc_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Setting an override uses its group, so its idle time starts anew at the
// call. Once a group idle for more than the TTL took an override that the
// very next sweep forgot with it. Dropping an override counts too, and so
// does one set on a parent whose children are all idle. A read of the
// override (GroupOverride) does not count.
func TestAnOverrideRestartsItsGroupsIdleTime(t *testing.T) {
	five := 5
	for _, tc := range []struct {
		name, key, task string
		before, after   *groupconc.GroupOverride // set as the task ends, and 90s after
		kept            bool
	}{
		{name: "set", key: "g", task: "g", after: &groupconc.GroupOverride{MaxConcurrency: &five}, kept: true},
		{name: "dropped", key: "g", task: "g", before: &groupconc.GroupOverride{MaxConcurrency: &five}, after: &groupconc.GroupOverride{}, kept: true},
		{name: "parent", key: "t", task: "t/u", after: &groupconc.GroupOverride{MaxConcurrency: &five}, kept: true},
		{name: "read", key: "g", task: "g", before: &groupconc.GroupOverride{MaxConcurrency: &five}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, groupconc.NewPolicyBuilder().IdleGroupTTL(idleTTL).ParentSeparator("/"))
				time.Sleep(30 * time.Second) // fake clock
				quiesce(t, e, submit(t, t.Context(), e, tc.task, "0", succeed))
				if tc.before != nil {
					require.NoError(t, e.SetGroupOverride(tc.key, *tc.before))
				}
				time.Sleep(35 * time.Second)
				e.Stats()                    // the first sweep: idle for 35s, kept
				time.Sleep(55 * time.Second) // idle for 1.5×TTL, the next sweep not due
				if tc.after != nil {
					require.NoError(t, e.SetGroupOverride(tc.key, *tc.after))
				} else {
					_, ok := e.GroupOverride(tc.key)
					require.True(t, ok, "the override before the read")
				}
				time.Sleep(10 * time.Second)
				_, ok := e.GroupStats(tc.key) // a sweep is due
				assert.Equal(t, tc.kept, ok, "%s remembered 10s after the call", tc.key)
				if tc.after != nil && !tc.after.IsZero() {
					o, ok := e.GroupOverride(tc.key)
					if assert.True(t, ok, "override kept") && assert.NotNil(t, o.MaxConcurrency) {
						assert.Equal(t, 5, *o.MaxConcurrency)
					}
				}
				time.Sleep(2 * idleTTL)
				e.Stats()
				assert.Empty(t, idleKeys(e), "idle for 2×TTL since the call")
				assert.Equal(t, 0, e.OverridesKept(), "overrides kept")
			})
		})
	}
}
