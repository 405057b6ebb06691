package groupconc_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// The behaviour suite of idle groups (docs/live-limits.md): IdleGroupTTL,
// on the fake clock of a synctest bubble.

const idleTTL = time.Minute

// idleKeys returns the keys AllGroupStats yields.
func idleKeys(e *groupconc.GroupExecutor) []string {
	var keys []string
	for gs := range e.AllGroupStats() {
		keys = append(keys, gs.GroupKey)
	}
	return keys
}

func TestIdleGroupIsGoneByTheTimeALaterSubmitOrStatsReturns(t *testing.T) {
	for _, via := range []string{"Stats", "Submit", "GroupStats", "AllGroupStats"} {
		t.Run(via, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, groupconc.NewPolicyBuilder().IdleGroupTTL(idleTTL))
				quiesce(t, e, submit(t, t.Context(), e, "a", "0", succeed))
				require.Equal(t, []string{"a"}, idleKeys(e))

				time.Sleep(2 * idleTTL) // fake clock
				switch via {
				case "Stats":
					assert.Equal(t, 0, e.Stats().Groups, "Stats().Groups")
				case "Submit":
					quiesce(t, e, submit(t, t.Context(), e, "b", "0", succeed))
					assert.Equal(t, 1, e.Stats().Groups, "Stats().Groups: b only")
				case "GroupStats":
					_, ok := e.GroupStats("a")
					assert.False(t, ok, "the first GroupStats(a) after 2×TTL")
				case "AllGroupStats":
					assert.NotContains(t, idleKeys(e), "a", "the first AllGroupStats after 2×TTL")
				}
				_, ok := e.GroupStats("a")
				assert.False(t, ok, "GroupStats(a) of a group idle for 2×TTL")
				assert.NotContains(t, idleKeys(e), "a", "AllGroupStats")
			})
		})
	}
}

func TestIdleGroupIsForgottenAfterEveryKindOfEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().IdleGroupTTL(idleTTL).
			DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(1))
		gate := make(chan struct{})
		var hs []*groupconc.TaskHandle[int]
		hs = append(hs, submit(t, t.Context(), e, "a", "runs", gated(gate, 0)))
		hs = append(hs, submit(t, t.Context(), e, "a", "cancelled", succeed))
		hs = append(hs, submit(t, t.Context(), e, "a", "rejected", succeed))
		hs = append(hs, submit(t, t.Context(), e, "b", "fails", func(context.Context) (int, error) { return 0, errBoom }))
		hs = append(hs, submit(t, t.Context(), e, "c", "panics", func(context.Context) (int, error) { panic("boom") }))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		hs = append(hs, submit(t, ctx, e, "d", "dead on arrival", succeed))
		synctest.Wait()
		hs[1].Cancel()
		close(gate)
		quiesce(t, e, hs...)
		require.ElementsMatch(t, []string{"a", "b", "c", "d"}, idleKeys(e))

		time.Sleep(2 * idleTTL)
		assert.Equal(t, 0, e.Stats().Groups)
		assert.Empty(t, idleKeys(e))
	})
}

func TestResolversAreCalledAgainForAForgottenGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		e := newExecutor(t, groupconc.NewPolicyBuilder().IdleGroupTTL(idleTTL).Isolation(groupconc.IsolationFairShare).
			ConcurrencyResolver(func(string) int { return int(calls.Add(1)) }).
			WeightResolver(func(string) int { return 10 * int(calls.Load()) }))
		quiesce(t, e, submit(t, t.Context(), e, "a", "0", succeed))
		quiesce(t, e, submit(t, t.Context(), e, "a", "1", succeed))
		gs := groupStats(t, e, "a")
		require.Equal(t, [2]int{1, 10}, [2]int{gs.MaxConcurrency, gs.Weight})

		time.Sleep(2 * idleTTL)
		quiesce(t, e, submit(t, t.Context(), e, "a", "2", succeed))
		gs = groupStats(t, e, "a")
		assert.Equal(t, [2]int{2, 20}, [2]int{gs.MaxConcurrency, gs.Weight}, "limits resolved again")
		assert.EqualValues(t, 2, calls.Load(), "concurrency resolver calls")
	})
}

func TestBusyGroupIsNeverForgottenHoweverLongItsTasksRunOrWait(t *testing.T) {
	for _, mode := range fsModes {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, groupconc.NewPolicyBuilder().IdleGroupTTL(idleTTL).Isolation(mode).
					GlobalMaxInFlight(1).DefaultMaxConcurrencyPerGroup(1))
				var starts fsStarts
				run, waitA, waitB := newGatedTask(t, 0), newGatedTask(t, 1), newGatedTask(t, 2)
				hs := []*groupconc.TaskHandle[int]{
					submit(t, t.Context(), e, "a", "runs", starts.task("runs", run)),
					submit(t, t.Context(), e, "a", "waits", starts.task("waits", waitA)),   // for a's concurrency
					submit(t, t.Context(), e, "b", "waits", starts.task("b-waits", waitB)), // for the global permit
				}
				synctest.Wait()
				require.Equal(t, []string{"runs"}, starts.list())

				// 20 TTLs pass, with Submit and Stats calls to other groups.
				for i := range 40 {
					time.Sleep(idleTTL / 2)
					e.Stats()
					submit(t, t.Context(), e, fmt.Sprint("other", i), "0", succeed).Cancel()
				}
				synctest.Wait()
				for key, busy := range map[string]int{"a": 2, "b": 1} {
					gs, ok := e.GroupStats(key)
					if assert.True(t, ok, "group %s forgotten while busy", key) {
						assert.Equal(t, busy, gs.Running+gs.Waiting, "group %s: running + waiting", key)
					}
				}
				// Forgetting a now would let a new task run beside "runs".
				late := newGatedTask(t, 3)
				hs = append(hs, submit(t, t.Context(), e, "a", "late", starts.task("late", late)))
				synctest.Wait()
				assert.Equal(t, []string{"runs"}, starts.list(), "started while a's only permit is held")

				for _, k := range []*gatedTask{run, waitA, waitB, late} {
					k.Release()
				}
				quiesce(t, e, hs...)
				assert.Len(t, starts.list(), 4)
			})
		})
	}
}

func TestIdleExecutorKeepsNoGoroutineForItsGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Never closed: the bubble must still end with no goroutine left,
		// before and after the groups are forgotten.
		e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().IdleGroupTTL(idleTTL).GlobalMaxInFlight(3)))
		var hs []*groupconc.TaskHandle[int]
		for i := range 100 {
			hs = append(hs, submit(t, t.Context(), e, fmt.Sprint("g", i), "0", succeed))
		}
		quiesce(t, e, hs...)
		time.Sleep(10 * idleTTL)
		assert.Equal(t, 0, e.Stats().Groups)
		time.Sleep(10 * idleTTL)
		quiesce(t, e, submit(t, t.Context(), e, "late", "0", succeed))
	})
}

func TestIdleGroupTTLTurnedOnByUpdatePolicyCountsIdleGroupsFromThen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder())
		for _, key := range []string{"a", "b", "c"} {
			quiesce(t, e, submit(t, t.Context(), e, key, "0", succeed))
		}
		time.Sleep(10 * idleTTL)
		require.Equal(t, 3, e.Stats().Groups, "without a TTL groups are kept")

		upUpdate(t, e, groupconc.NewPolicyBuilder().IdleGroupTTL(idleTTL))
		for _, key := range []string{"a", "b", "c"} {
			_, ok := e.GroupStats(key)
			assert.True(t, ok, "%s is idle from UpdatePolicy on", key)
		}
		time.Sleep(2 * idleTTL)
		assert.Equal(t, 0, e.Stats().Groups, "idle for 2×TTL since UpdatePolicy")

		quiesce(t, e, submit(t, t.Context(), e, "b", "0", succeed))
		upUpdate(t, e, groupconc.NewPolicyBuilder())
		time.Sleep(10 * idleTTL)
		assert.Equal(t, 1, e.Stats().Groups, "the TTL turned off again")
	})
}

// A TTL changed by UpdatePolicy counts a group's idle time from its last
// task, not from the change: only a TTL turned on starts the count again.
// Idle for 61s, twice the new TTL of 30s, the group is gone.
func TestIdleGroupTTLChangedByUpdatePolicyKeepsTheIdleTimeSoFar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().IdleGroupTTL(time.Minute))
		quiesce(t, e, submit(t, t.Context(), e, "a", "0", succeed))
		time.Sleep(40 * time.Second) // fake clock
		upUpdate(t, e, groupconc.NewPolicyBuilder().IdleGroupTTL(30*time.Second))
		time.Sleep(21 * time.Second)
		assert.Equal(t, 0, e.Stats().Groups, "idle for 61s, twice the TTL and more")
	})
}

func TestBuildRejectsANegativeIdleGroupTTL(t *testing.T) {
	p, err := groupconc.NewPolicyBuilder().IdleGroupTTL(-time.Nanosecond).Build()
	assert.Nil(t, p)
	assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
	assert.ErrorContains(t, err, "IdleGroupTTL")

	assert.Equal(t, time.Duration(0), groupconc.DefaultPolicy().IdleGroupTTL(), "default: never")
	assert.Equal(t, time.Duration(0), mustBuild(t, groupconc.NewPolicyBuilder()).IdleGroupTTL(), "builder default")
	assert.Equal(t, idleTTL, mustBuild(t, groupconc.NewPolicyBuilder().IdleGroupTTL(idleTTL)).IdleGroupTTL())
}

func TestManyDistinctKeysOverTimeKeepTheGroupCountBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			ttl   = time.Second
			step  = 10 * time.Millisecond // fake time between batches
			batch = 100
		)
		keys := 100_000
		if testing.Short() {
			keys = 10_000
		}
		e := newExecutor(t, groupconc.NewPolicyBuilder().IdleGroupTTL(ttl))
		peak := 0
		for i := 0; i < keys; i += batch {
			hs := make([]*groupconc.TaskHandle[int], batch)
			for j := range hs {
				hs[j] = submit(t, t.Context(), e, fmt.Sprint("k", i+j), "0", succeed)
			}
			for _, h := range hs {
				h.Wait()
			}
			peak = max(peak, e.Stats().Groups)
			time.Sleep(step)
		}
		// A group idle for 2×ttl is gone: at most the keys of the last
		// 2×ttl/step batches, and the current one, are known.
		bound := int(2*ttl/step+1) * batch
		t.Logf("%d keys over %v: peak Stats().Groups %d (bound %d)", keys, time.Duration(keys/batch)*step, peak, bound)
		assert.LessOrEqual(t, peak, bound)
		time.Sleep(2 * ttl)
		assert.Equal(t, 0, e.Stats().Groups, "after 2×ttl of quiet")
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
	})
}

func TestIdleGroupsForgottenWhileSubmittersRaceNeverLetAKeyExceedItsLimit(t *testing.T) {
	// Real time, a TTL of a nanosecond: groups are forgotten as soon as they
	// are idle, while four submitters use the same three keys.
	e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().IdleGroupTTL(time.Nanosecond).DefaultMaxConcurrencyPerGroup(1)))
	defer e.Close()
	keys := []string{"a", "b", "c"}
	gauges := map[string]*gauge{"a": {}, "b": {}, "c": {}}
	var submitters sync.WaitGroup
	for s := range 4 {
		submitters.Go(func() {
			for i := range 300 {
				key := keys[(s+i)%len(keys)]
				g := gauges[key]
				h, err := groupconc.Submit(context.Background(), e, key, fmt.Sprint(s, "-", i), func(context.Context) (int, error) {
					g.enter()
					defer g.exit()
					runtime.Gosched()
					return 1, nil
				})
				if !assert.NoError(t, err) {
					return
				}
				if i%4 == 3 {
					h.Wait()
					e.Stats()
				}
			}
		})
	}
	submitters.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.Shutdown(ctx))
	for key, g := range gauges {
		assert.LessOrEqual(t, g.max.Load(), int64(1), "most tasks of %s running at once", key)
	}
	s := e.Stats()
	assert.Equal(t, uint64(1200), s.Succeeded, "%+v", s)
}

// A parent is remembered while a child is, but its subtree's idle time
// runs from its last task, wherever that ran. So a tree idle for 2×TTL is
// gone by the time a later call returns, as a single group is. A parent
// whose own task ended later stays until it has been idle for the TTL.
func TestIdleTreeIsGoneByTheTimeALaterCallReturns(t *testing.T) {
	for _, via := range []string{"Stats", "Submit", "GroupStats", "AllGroupStats"} {
		t.Run(via, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, groupconc.NewPolicyBuilder().ParentSeparator("/").IdleGroupTTL(idleTTL))
				late := func(context.Context) (int, error) {
					time.Sleep(idleTTL + idleTTL/2) // fake clock
					return 0, nil
				}
				hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "t/u/a", "0", succeed),
					submit(t, t.Context(), e, "t/v", "1", succeed),
					submit(t, t.Context(), e, "s/a", "2", succeed), submit(t, t.Context(), e, "s", "3", late)}
				time.Sleep(2 * idleTTL) // fake clock; no call meanwhile looks for idle groups
				switch via {
				case "Stats":
					e.Stats()
				case "Submit":
					hs = append(hs, submit(t, t.Context(), e, "b", "4", succeed))
				case "GroupStats":
					e.GroupStats("t")
				case "AllGroupStats":
					idleKeys(e)
				}
				quiesce(t, e, hs...)
				notB := func(k string) bool { return k == "b" }
				assert.ElementsMatch(t, []string{"s"}, slices.DeleteFunc(idleKeys(e), notB),
					"t's subtree idle for 2×TTL; s's own task ended TTL/2 ago")
				time.Sleep(2 * idleTTL) // fake clock
				assert.Empty(t, slices.DeleteFunc(idleKeys(e), notB))
			})
		})
	}
}
