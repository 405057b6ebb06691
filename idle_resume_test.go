package groupconc_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A paused group is not idle. So its idle time starts when it is resumed,
// not when its last task ended before the pause. A resumed group, and the
// rest of its override, stay until it has been idle for the TTL since.
// Both for a group of its own and for a tenant whose idle user was
// forgotten while it was paused.
func TestAResumedGroupIsIdleFromItsResume(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").IdleGroupTTL(idleTTL))
			quiesce(t, e, submit(t, t.Context(), e, "g", "first", succeed))
			quiesce(t, e, submit(t, t.Context(), e, "t/u", "first", succeed))
			five, yes := 5, true
			for _, key := range []string{"g", "t"} {
				require.NoError(t, e.SetGroupOverride(key, groupconc.GroupOverride{MaxConcurrency: &five, Paused: &yes}))
			}
			time.Sleep(3 * idleTTL) // fake clock
			e.Stats()               // forgets what is idle: t/u
			require.ElementsMatch(t, []string{"g", "t"}, idleKeys(e), "paused groups stay")

			time.Sleep(idleTTL / 2)
			for _, key := range []string{"g", "t"} {
				require.NoError(t, e.SetGroupOverride(key, groupconc.GroupOverride{MaxConcurrency: &five}))
			}
			time.Sleep(idleTTL/2 + time.Second) // idle for half the TTL since the resume
			e.Stats()                           // a sweep is due
			assert.ElementsMatch(t, []string{"g", "t"}, idleKeys(e), "forgotten before idle for the TTL")
			for _, key := range []string{"g", "t"} {
				o, ok := e.GroupOverride(key)
				if assert.True(t, ok, key) && assert.NotNil(t, o.MaxConcurrency, key) {
					assert.Equal(t, 5, *o.MaxConcurrency, key)
				}
			}

			time.Sleep(2 * idleTTL)
			e.Stats()
			assert.Empty(t, idleKeys(e), "idle for the TTL since the resume")
		})
	})
}
