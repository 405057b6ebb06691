package groupconc_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// activeStats returns what ActiveGroupStats yields, by key.
func activeStats(t *testing.T, e *groupconc.GroupExecutor) map[string]groupconc.GroupStats {
	t.Helper()
	m := map[string]groupconc.GroupStats{}
	for gs := range e.ActiveGroupStats() {
		_, twice := m[gs.GroupKey]
		require.False(t, twice, "group %s yielded twice", gs.GroupKey)
		m[gs.GroupKey] = gs
	}
	return m
}

// busyStats returns what AllGroupStats yields for the groups with
// something going on, or a pause of their own, by key.
func busyStats(e *groupconc.GroupExecutor) map[string]groupconc.GroupStats {
	m := map[string]groupconc.GroupStats{}
	for gs := range e.AllGroupStats() {
		o, _ := e.GroupOverride(gs.GroupKey)
		if gs.Running+gs.Waiting+gs.InFlight+gs.Blocked != 0 || o.Paused != nil && *o.Paused {
			m[gs.GroupKey] = gs
		}
	}
	return m
}

// A group under a paused ancestor shows in ActiveGroupStats when it has
// something going on, as any group, whatever its place in the tree: the
// paused ancestor stands for the rest. b/y is remembered as b/y/z's
// parent, and b/y/z as an idle group; neither shows until b/y/z has a task.
func TestActiveGroupStatsTreatsTheGroupsUnderAPausedAncestorAlike(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/"))
			quiesce(t, e, submit(t, t.Context(), e, "b/y/z", "done", succeed))
			paused := true
			require.NoError(t, e.SetGroupOverride("b", groupconc.GroupOverride{Paused: &paused}))
			assert.Equal(t, busyStats(e), activeStats(t, e))
			assert.Equal(t, []string{"b"}, slices.Sorted(maps.Keys(activeStats(t, e))))
			h := submit(t, t.Context(), e, "b/y/z", "waits", succeed)
			synctest.Wait()
			assert.Equal(t, busyStats(e), activeStats(t, e))
			assert.Equal(t, []string{"b", "b/y", "b/y/z"}, slices.Sorted(maps.Keys(activeStats(t, e))), "the waiting task shows in its group and its ancestors")
			require.NoError(t, e.SetGroupOverride("b", groupconc.GroupOverride{}))
			quiesce(t, e, h)
		})
	})
}

func TestActiveGroupStatsYieldsTheGroupsRunningWaitingBlockedOrPausedAlone(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e, ks, hs := fullGroup(t, mode, nil)
			var idle []*groupconc.TaskHandle[int]
			for i := range 50 {
				idle = append(idle, submit(t, t.Context(), e, fmt.Sprint("idle-", i), "t", succeed))
			}
			for _, h := range idle {
				h.Wait()
			}
			third := newGatedTask(t, 3)
			b := submitBlocking(t.Context(), e, "a", "blocked", third.Fn, groupconc.SubmitOptions{})
			synctest.Wait()
			pause(t, e, "idle-7", true)

			got := activeStats(t, e)
			assert.Equal(t, busyStats(e), got, "the same stats as AllGroupStats gives the busy groups")
			require.ElementsMatch(t, []string{"a", "idle-7"}, keysOf(got))
			a := got["a"]
			assert.Equal(t, [3]int{1, 1, 1}, [3]int{a.Running, a.Waiting, a.Blocked}, "running, waiting, blocked")
			assert.True(t, got["idle-7"].Paused, "a paused group with no task")
			assert.Equal(t, 51, e.Stats().Groups, "every group is still remembered")

			pause(t, e, "idle-7", false)
			ks[0].Release()
			ks[1].Release()
			third.Release()
			<-b.done
			require.NoError(t, b.err)
			quiesce(t, e, append(hs, b.h)...)
			assert.Empty(t, activeStats(t, e), "every group idle")
		})
	})
}

func TestActiveGroupStatsLeavesOutAnEvictedGroupWhoseTaskStillRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		old := newGatedTask(t, 1)
		h := submit(t, t.Context(), e, "a", "old", old.Fn) // ignores its context
		synctest.Wait()
		require.Contains(t, activeStats(t, e), "a")

		e.EvictGroup("a")
		assert.Empty(t, activeStats(t, e), "evicted, though its task runs")
		fresh := newGatedTask(t, 2)
		h2 := submit(t, t.Context(), e, "a", "fresh", fresh.Fn)
		synctest.Wait()
		got := activeStats(t, e)
		require.Contains(t, got, "a", "the key's new group")
		assert.Equal(t, 1, got["a"].Running, "the new group's task alone")

		old.Release()
		fresh.Release()
		quiesce(t, e, h, h2)
		assert.Empty(t, activeStats(t, e))
	})
}

func TestActiveGroupStatsForgetsIdleGroupsAndSeesTheirKeysAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ttl := time.Minute
		e := newExecutor(t, builder().IdleGroupTTL(ttl))
		k := newGatedTask(t, 1)
		h := submit(t, t.Context(), e, "a", "1", k.Fn)
		time.Sleep(3 * ttl) // fake clock: a group with a running task is never forgotten
		require.Contains(t, activeStats(t, e), "a")
		assert.Equal(t, 3*ttl, activeStats(t, e)["a"].OldestRunning)
		k.Release()
		quiesce(t, e, h)
		assert.Empty(t, activeStats(t, e))

		time.Sleep(2 * ttl) // fake clock: past the TTL
		assert.Empty(t, activeStats(t, e))
		assert.Zero(t, e.Stats().Groups, "forgotten")
		k2 := newGatedTask(t, 2)
		h2 := submit(t, t.Context(), e, "a", "2", k2.Fn)
		synctest.Wait()
		got := activeStats(t, e)
		require.Contains(t, got, "a", "the key's new group")
		assert.Equal(t, uint64(0), got["a"].Succeeded, "counted from the new group's making")
		k2.Release()
		quiesce(t, e, h2)
	})
}

func TestActiveGroupStatsStopsWhenTheLoopBreaks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		var ks []*gatedTask
		var hs []*groupconc.TaskHandle[int]
		for i := range 5 {
			k := newGatedTask(t, i)
			ks = append(ks, k)
			hs = append(hs, submit(t, t.Context(), e, fmt.Sprint(i), "t", k.Fn))
		}
		synctest.Wait()
		n := 0
		for range e.ActiveGroupStats() {
			n++
			if n == 2 {
				break
			}
		}
		assert.Equal(t, 2, n)
		for _, k := range ks {
			k.Release()
		}
		quiesce(t, e, hs...)
	})
}

func TestActiveGroupStatsOfAZeroExecutorYieldsNothing(t *testing.T) {
	var e groupconc.GroupExecutor
	for gs := range e.ActiveGroupStats() {
		t.Errorf("yielded %+v", gs)
	}
}

func keysOf(m map[string]groupconc.GroupStats) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// A Do inside a task holds no permit of its group, so while it runs the
// group is active with nothing to show. It is left out, and the groups
// listed after it are still yielded.
func TestActiveGroupStatsGoesOnPastAGroupWithNothingToShow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		inner := newGatedTask(t, 0)
		outer := submit(t, t.Context(), e, "outer", "outer", func(ctx context.Context) (int, error) {
			return groupconc.Do(ctx, e, "inner", inner.Fn, groupconc.SubmitOptions{})
		})
		synctest.Wait()
		require.True(t, inner.started.Load())
		later := newGatedTask(t, 1)
		hl := submitGated(t, e, "later", "", later, groupconc.SubmitOptions{})
		synctest.Wait()
		assert.ElementsMatch(t, []string{"outer", "later"}, slices.Collect(maps.Keys(activeStats(t, e))))
		releaseAll(t, e, []*gatedTask{inner, later}, []*groupconc.TaskHandle[int]{outer, hl})
	})
}
