package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A user whose only business is a caller blocked on its tenant's queue, or
// a Do waiting for its tenant's limit, is not idle. It stays however long
// that lasts, and its task then runs and counts in it and in the tenant.
func TestAUserWaitingOnlyAtItsTenantIsNeverForgotten(t *testing.T) {
	for _, how := range []string{"Block", "Do"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, groupconc.NewPolicyBuilder().ParentSeparator("/").IdleGroupTTL(idleTTL).
					PerGroupMaxConcurrency(map[string]int{"t": 1}).PerGroupQueueThreshold(map[string]int{"t": 0}))
				k := newGatedTask(t, 1)
				h := submitGated(t, e, "t/u1", "a", k, groupconc.SubmitOptions{})
				synctest.Wait()
				done := make(chan error, 1)
				go func() {
					if how == "Do" {
						_, err := groupconc.Do(context.Background(), e, "t/u2", succeed, groupconc.SubmitOptions{Block: true})
						done <- err
						return
					}
					h2, err := groupconc.SubmitWith(context.Background(), e, "t/u2", "b", succeed, groupconc.SubmitOptions{Block: true})
					if err == nil {
						h2.Wait()
					}
					done <- err
				}()
				synctest.Wait()
				time.Sleep(3 * idleTTL) // fake clock
				assert.Equal(t, 3, e.Stats().Groups, "t, t/u1 and t/u2 after 3×TTL")
				_, ok := e.GroupStats("t/u2")
				assert.True(t, ok, "t/u2 remembered")
				k.Release()
				require.NoError(t, <-done)
				quiesce(t, e, h)
				gs, _ := e.GroupStats("t/u2")
				assert.Equal(t, uint64(1), gs.Succeeded, "t/u2's task counted in t/u2")
				gs, _ = e.GroupStats("t")
				assert.Equal(t, uint64(2), gs.Succeeded, "both counted in t")
			})
		})
	}
}

// A user forgotten under a paused tenant and made again is held by the
// tenant's pause, which stays. The tenant's counters keep the forgotten
// user's tasks. The user's own start again at 0.
func TestAUserMadeAgainUnderAPausedTenantWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().ParentSeparator("/").IdleGroupTTL(idleTTL))
		quiesce(t, e, submit(t, t.Context(), e, "t/u", "0", succeed))
		yes, no := true, false
		require.NoError(t, e.SetGroupOverride("t", groupconc.GroupOverride{Paused: &yes}))
		time.Sleep(3 * idleTTL) // fake clock
		_, ok := e.GroupStats("t/u")
		require.False(t, ok, "t/u forgotten under its paused tenant")
		k := newGatedTask(t, 1)
		h := submitGated(t, e, "t/u", "x", k, groupconc.SubmitOptions{})
		synctest.Wait()
		assert.False(t, k.started.Load(), "started under a paused tenant")
		gs, _ := e.GroupStats("t/u")
		assert.True(t, gs.Paused, "t/u shows its tenant's pause")
		assert.Equal(t, uint64(0), gs.Succeeded, "t/u's counters start again")
		require.NoError(t, e.SetGroupOverride("t", groupconc.GroupOverride{Paused: &no}))
		synctest.Wait()
		assert.True(t, k.started.Load(), "started once its tenant resumed")
		k.Release()
		quiesce(t, e, h)
		gs, _ = e.GroupStats("t")
		assert.Equal(t, uint64(2), gs.Succeeded, "t counts both users' tasks")
	})
}
