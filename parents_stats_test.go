package groupconc_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// counts is the part of a GroupStats that counts tasks.
type counts struct{ Running, RunningCost, Waiting, WaitingGlobal, InFlight, Blocked int }

func countsOf(st groupconc.GroupStats) counts {
	return counts{st.Running, st.RunningCost, st.Waiting, st.WaitingGlobal, st.InFlight, st.Blocked}
}

// A grandparent's counts and ages cover its whole subtree, its own tasks
// included, and each task is counted once at every level and in Stats.
func TestAGrandparentsStatsCoverItsWholeSubtree(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).GlobalMaxInFlight(3).ParentSeparator("/").
				DefaultMaxConcurrencyPerGroup(5).PerGroupMaxConcurrency(map[string]int{"org/acme": 1}))
			time.Sleep(time.Second) // fake clock: nothing starts as the executor's clock does
			ks, hs := submitEach(t, e, "org/acme/u1", "org/beta/u1")
			time.Sleep(time.Second) // fake clock: they run a second before the rest come
			more, hm := submitEach(t, e, "org/acme/u2", "org", "org/beta/u1")
			ks, hs = append(ks, more...), append(hs, hm...)
			synctest.Wait()
			time.Sleep(2 * time.Second) // fake clock: the waiting wait 2s
			// Under IsolationOff u2's task holds a global permit, org's waits for one.
			want := map[string]counts{
				"org":      {2, 2, 3, 2, 3, 0},
				"org/acme": {1, 1, 1, 0, 2, 0},
				"org/beta": {1, 1, 1, 1, 1, 0},
			}
			running := 2
			if mode == groupconc.IsolationFairShare { // group first: org's task runs, beta's second holds beta's permits
				want = map[string]counts{
					"org":      {3, 3, 2, 1, 5, 0},
					"org/acme": {1, 1, 1, 0, 2, 0},
					"org/beta": {1, 1, 1, 1, 2, 0},
				}
				running = 3
			}
			for key, w := range want {
				st := groupStats(t, e, key)
				assert.Equal(t, w, countsOf(st), key)
				assert.Equal(t, 2*time.Second, st.OldestWait, key)
				assert.Equal(t, 3*time.Second, st.OldestRunning, key)
			}
			s := e.Stats()
			assert.Equal(t, running, s.Running, "each task once")
			assert.Equal(t, 5-running, s.Waiting)
			assert.Equal(t, 6, s.Groups, "org, its 2 children and their 3")
			for _, k := range ks {
				k.Release()
			}
			quiesce(t, e, hs...)
			for key := range want {
				st := groupStats(t, e, key)
				assert.Equal(t, counts{}, countsOf(st), key)
				assert.Zero(t, st.OldestWait, key)
				assert.Zero(t, st.OldestRunning, key)
			}
			assert.Equal(t, uint64(5), groupStats(t, e, "org").Succeeded)
		})
	})
}

// A parent's Blocked counts the callers blocked on any queue of its
// subtree, once each, and its outcome counters every ending of its
// subtree's tasks.
func TestAParentsBlockedAndOutcomesCoverItsSubtree(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(1).
				PerGroupMaxConcurrency(map[string]int{"org": 5}).
				PerGroupQueueThreshold(map[string]int{"org/acme": 1, "org/beta/u1": 0}))
			ks, hs := submitEach(t, e, "org/acme/u1", "org/acme/u2", "org/beta/u1")
			synctest.Wait()
			requireWaiting(t, hs[1], ks[1]) // acme's queue is full now
			done := make(chan error, 2)
			for _, key := range []string{"org/acme/u3", "org/beta/u1"} {
				go func() {
					h, err := groupconc.SubmitWith(context.Background(), e, key, "blocked", succeed, groupconc.SubmitOptions{Block: true})
					if err == nil {
						h.Wait()
					}
					done <- err
				}()
			}
			synctest.Wait()
			for key, n := range map[string]int{"org": 2, "org/acme": 1, "org/acme/u3": 1, "org/beta": 1, "org/beta/u1": 1, "org/acme/u1": 0} {
				assert.Equal(t, n, groupStats(t, e, key).Blocked, key)
			}
			assert.Equal(t, 2, e.Stats().Blocked)

			rej := submit(t, context.Background(), e, "org/acme/u4", "rejected", succeed)
			assert.Equal(t, groupconc.StatusRejected, rej.Wait().Status)
			failed := submit(t, context.Background(), e, "org/x", "failed", func(context.Context) (int, error) { return 0, errBoom })
			assert.Equal(t, groupconc.StatusFailed, failed.Wait().Status)
			require.True(t, hs[1].Cancel())
			synctest.Wait()
			for _, k := range ks {
				k.Release()
			}
			require.NoError(t, <-done)
			require.NoError(t, <-done)
			quiesce(t, e, hs...)
			st := groupStats(t, e, "org")
			assert.Equal(t, [4]uint64{4, 1, 1, 1}, [4]uint64{st.Succeeded, st.Failed, st.Cancelled, st.Rejected}, "succeeded, failed, cancelled, rejected")
			st = groupStats(t, e, "org/acme")
			assert.Equal(t, [4]uint64{2, 0, 1, 1}, [4]uint64{st.Succeeded, st.Failed, st.Cancelled, st.Rejected})
			s := e.Stats()
			assert.Equal(t, s.Submitted, st2sum(groupStats(t, e, "org")), "every task is in org's subtree")
		})
	})
}

func st2sum(st groupconc.GroupStats) uint64 {
	return st.Succeeded + st.Failed + st.Cancelled + st.Rejected
}

// AllGroupStats yields every parent, with its Parent, once; Stats().Groups
// counts them.
func TestAllGroupStatsYieldsEveryParent(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).ParentSeparator("/"))
			_, err := groupconc.Do(context.Background(), e, "a/b/c", succeed, groupconc.SubmitOptions{})
			require.NoError(t, err)
			_, err = groupconc.Do(context.Background(), e, "a/d", succeed, groupconc.SubmitOptions{})
			require.NoError(t, err)
			got := map[string]string{}
			for st := range e.AllGroupStats() {
				_, dup := got[st.GroupKey]
				assert.False(t, dup, st.GroupKey)
				got[st.GroupKey] = st.Parent
			}
			assert.Equal(t, map[string]string{"a/b/c": "a/b", "a/b": "a", "a": "", "a/d": "a"}, got)
			assert.Equal(t, len(got), e.Stats().Groups)
			assert.Equal(t, []string{"a", "a/b", "a/b/c", "a/d"}, slices.Sorted(maps.Keys(got)))
			assert.Equal(t, uint64(2), groupStats(t, e, "a").Succeeded)
		})
	})
}

// A task of cost 6 holds at each level the whole limit or its cost: 6 of
// org's 10, 4 of acme's 4, 5 of u1's 5. It is one running task at each,
// and a task waiting for acme holds none of u2's RunningCost.
func TestACostlyTaskCountsAtEachLevelsLimit(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(5).
				PerGroupMaxConcurrency(map[string]int{"org": 10, "org/acme": 4}))
			big := newGatedTask(t, 0)
			hb := submitGated(t, e, "org/acme/u1", "", big, groupconc.SubmitOptions{Cost: 6})
			w := newGatedTask(t, 0)
			hw := submitGated(t, e, "org/acme/u2", "", w, groupconc.SubmitOptions{Cost: 2})
			synctest.Wait()
			for k, c := range map[string][3]int{"org": {1, 6, 1}, "org/acme": {1, 4, 1}, "org/acme/u1": {1, 5, 0}, "org/acme/u2": {0, 0, 1}} {
				st := groupStats(t, e, k)
				assert.Equal(t, c, [3]int{st.Running, st.RunningCost, st.Waiting}, k)
			}
			big.Release()
			w.Release()
			quiesce(t, e, hb, hw)
		})
	})
}
