package groupconc_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// evictedWhileRunning runs f, in a bubble and in each mode, on an executor
// with an idle TTL of a minute whose user "a/k" was evicted while its task
// runs on (it ignores its context) until gate closes. Its tenant "a" has
// an override, which goes when a is forgotten.
func evictedWhileRunning(t *testing.T, f func(t *testing.T, e *groupconc.GroupExecutor, gate chan struct{}, h *groupconc.TaskHandle[int])) {
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, err := groupconc.NewPolicyBuilder().Isolation(mode).ParentSeparator("/").IdleGroupTTL(time.Minute).Build()
				require.NoError(t, err)
				e := groupconc.New(p)
				defer e.Close()
				gate := make(chan struct{})
				h, err := groupconc.Submit(context.Background(), e, "a/k", "r", func(context.Context) (int, error) {
					<-gate
					return 1, nil
				})
				require.NoError(t, err)
				synctest.Wait()
				one := 1
				require.NoError(t, e.SetGroupOverride("a", groupconc.GroupOverride{MaxConcurrency: &one}))
				e.EvictGroup("a/k")
				f(t, e, gate, h)
			})
		})
	}
}

// Such a user is still its tenant's: the tenant is active while the task
// runs.
func TestAParentOfAnEvictedChildWhoseTaskRunsOnStaysActive(t *testing.T) {
	evictedWhileRunning(t, func(t *testing.T, e *groupconc.GroupExecutor, gate chan struct{}, h *groupconc.TaskHandle[int]) {
		time.Sleep(5 * time.Minute) // fake clock: past the TTL, the task still runs
		st, ok := e.GroupStats("a")
		require.True(t, ok, "a forgotten while its subtree's task runs")
		assert.Equal(t, 1, st.Running)
		var active []string
		for s := range e.ActiveGroupStats() {
			active = append(active, s.GroupKey)
		}
		assert.True(t, slices.Contains(active, "a"), "a's task runs, but ActiveGroupStats yields %v", active)
		close(gate)
		h.Wait()
	})
}

// Nor is the tenant forgotten, with its override, until the TTL has passed
// since that task's end.
func TestAParentOfAnEvictedChildIsIdleFromItsLastTasksEnd(t *testing.T) {
	evictedWhileRunning(t, func(t *testing.T, e *groupconc.GroupExecutor, gate chan struct{}, h *groupconc.TaskHandle[int]) {
		time.Sleep(5 * time.Minute) // fake clock; no sweep meanwhile
		close(gate)
		h.Wait()
		synctest.Wait()
		time.Sleep(time.Second) // fake clock
		_, ok := e.GroupStats("a")
		_, kept := e.GroupOverride("a")
		assert.True(t, ok && kept, "a forgotten a second after its last task ended (TTL a minute)")

		time.Sleep(2 * time.Minute) // fake clock
		e.Stats()
		_, ok = e.GroupStats("a")
		assert.False(t, ok, "a kept past the TTL after its last task")
	})
}

// A parent is remembered while its child is. So a tenant whose idle user
// is evicted is idle from the eviction, not from that user's last task.
func TestAParentOfAChildEvictedWhileIdleIsIdleFromTheEviction(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).ParentSeparator("/").IdleGroupTTL(time.Minute))
			quiesce(t, e, submit(t, t.Context(), e, "a/k", "r", succeed))
			time.Sleep(50 * time.Second) // fake clock: a/k idle, and kept
			e.EvictGroup("a/k")
			time.Sleep(20 * time.Second) // fake clock: past the TTL since a/k's task
			e.Stats()
			_, ok := e.GroupStats("a")
			assert.True(t, ok, "a forgotten 20s after its last child was evicted (TTL a minute)")

			time.Sleep(time.Minute) // fake clock
			e.Stats()
			_, ok = e.GroupStats("a")
			assert.False(t, ok, "a kept past the TTL after its last child was evicted")
		})
	})
}
