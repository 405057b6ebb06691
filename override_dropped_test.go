package groupconc_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// An override goes with its group: forgotten as idle, or evicted, the
// group takes it along, and the executor keeps nothing for the key. Once
// it kept the override, and the group with it, until MaxGroupOverrides
// keys had one: memory for keys long gone.
func TestAnOverrideGoesWithItsGroup(t *testing.T) {
	for _, how := range []string{"forgotten", "evicted"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, groupconc.NewPolicyBuilder().IdleGroupTTL(idleTTL).ParentSeparator("/"))
				keys := []string{"t/u1", "t/u2", "t", "v"}
				for _, k := range keys {
					quiesce(t, e, submit(t, t.Context(), e, k, "0", succeed))
					require.NoError(t, e.SetGroupOverride(k, groupconc.GroupOverride{MaxConcurrency: ptr(2)}))
				}
				require.Equal(t, len(keys), e.OverridesKept())
				switch how {
				case "forgotten":
					time.Sleep(2 * idleTTL) // fake clock
					assert.Equal(t, 0, e.Stats().Groups, "groups after 2×TTL")
				case "evicted":
					e.EvictGroup("t") // and its subtree
					e.EvictGroup("v")
				}
				assert.Equal(t, 0, e.OverridesKept(), "overrides kept for keys gone")
				for k := range e.GroupOverrides() {
					t.Errorf("GroupOverrides lists %q", k)
				}
				for _, k := range keys {
					quiesce(t, e, submit(t, t.Context(), e, k, "1", succeed))
					gs, _ := e.GroupStats(k)
					assert.Equal(t, 1, gs.MaxConcurrency, fmt.Sprintf("%s made again resolves from the policy", k))
				}
			})
		})
	}
}

// A group evicted as its override's guards run is gone: SetGroupOverride
// says so, as for a group evicted before, and keeps nothing.
func TestAnOverrideOfAGroupEvictedAsItsGuardsRunIsRefused(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder())
	submit(t, t.Context(), e, "k", "0", succeed).Wait()
	remove, err := e.GuardOverrides(func(k string, _ groupconc.GroupOverride) error {
		e.EvictGroup(k)
		return nil
	})
	require.NoError(t, err)
	defer remove()
	err = e.SetGroupOverride("k", groupconc.GroupOverride{MaxConcurrency: ptr(2)})
	assert.ErrorIs(t, err, groupconc.ErrUnknownGroup)
	assert.Equal(t, 0, e.OverridesKept())
}

// An override kept for a group that is gone (set as the group was
// evicted) is dead: the key's next group neither shows nor takes it, a
// new override of the key replaces it, and it makes room for another key
// once MaxGroupOverrides keys have one.
func TestAnOverrideOfAGroupGoneIsDead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder())
		submit(t, t.Context(), e, "k", "0", succeed).Wait()
		e.SetOverrideAsEvicted("k", groupconc.GroupOverride{MaxConcurrency: ptr(2)})
		submit(t, t.Context(), e, "k", "1", succeed).Wait()
		_, ok := e.GroupOverride("k")
		assert.False(t, ok, "the new group of k has no override")
		for k := range e.GroupOverrides() {
			t.Errorf("GroupOverrides lists %q", k)
		}
		assert.Equal(t, 1, groupStats(t, e, "k").MaxConcurrency)

		hs := make([]*groupconc.TaskHandle[int], 0, groupconc.MaxGroupOverrides)
		for i := range groupconc.MaxGroupOverrides - 1 {
			k := fmt.Sprint("g", i)
			hs = append(hs, submit(t, t.Context(), e, k, "0", succeed))
			require.NoError(t, e.SetGroupOverride(k, groupconc.GroupOverride{MaxConcurrency: ptr(2)}))
		}
		require.Equal(t, groupconc.MaxGroupOverrides, e.OverridesKept(), "the dead one too")
		hs = append(hs, submit(t, t.Context(), e, "last", "0", succeed))
		require.NoError(t, e.SetGroupOverride("last", groupconc.GroupOverride{MaxConcurrency: ptr(3)}), "the dead override makes room")
		o, ok := e.GroupOverride("last")
		require.True(t, ok)
		assert.Equal(t, 3, *o.MaxConcurrency)
		assert.Equal(t, groupconc.MaxGroupOverrides, e.OverridesKept())
		quiesce(t, e, hs...)
	})
}
