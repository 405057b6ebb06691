package groupconc_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// allStats returns AllGroupStats by key.
func allStats(e *groupconc.GroupExecutor) map[string]groupconc.GroupStats {
	m := map[string]groupconc.GroupStats{}
	for gs := range e.AllGroupStats() {
		m[gs.GroupKey] = gs
	}
	return m
}

func TestOldestRunningTellsAHungGroupFromABusyOne(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).DefaultMaxConcurrencyPerGroup(2))
			hung := newGatedTask(t, 0)
			hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "hung", "0", hung.Fn)}
			time.Sleep(12 * time.Minute)
			later := newGatedTask(t, 0)
			hs = append(hs, submit(t, t.Context(), e, "hung", "1", later.Fn))
			busy := submit(t, t.Context(), e, "busy", "0", func(ctx context.Context) (int, error) {
				<-ctx.Done()
				return 0, ctx.Err()
			})
			synctest.Wait()
			time.Sleep(time.Second)

			gs := groupStats(t, e, "hung")
			assert.Equal(t, 12*time.Minute+time.Second, gs.OldestRunning, "the oldest of two running")
			assert.Equal(t, gs.OldestRunning, allStats(e)["hung"].OldestRunning, "AllGroupStats agrees")
			assert.Equal(t, time.Second, groupStats(t, e, "busy").OldestRunning)
			busy.Cancel()
			hung.Release()
			synctest.Wait()
			assert.Equal(t, time.Second, groupStats(t, e, "hung").OldestRunning, "the one left")
			later.Release()
			quiesce(t, e, append(hs, busy)...)
			assert.Zero(t, groupStats(t, e, "hung").OldestRunning, "none runs")
		})
	})
}

func TestGroupStatsCountTheOutcomesOfTheGroupsOwnTasks(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).DefaultQueueThresholdPerGroup(1))
			k := newGatedTask(t, 0)
			hs := []*groupconc.TaskHandle[int]{
				submit(t, t.Context(), e, "a", "run", k.Fn),
				submit(t, t.Context(), e, "a", "wait", succeed),
				submit(t, t.Context(), e, "a", "rejected", succeed),
				submit(t, t.Context(), e, "b", "fail", func(context.Context) (int, error) { return 0, errBoom }),
			}
			synctest.Wait()
			hs[1].Cancel()
			k.Release()
			quiesce(t, e, hs...)
			a := groupStats(t, e, "a")
			assert.Equal(t, [4]uint64{1, 0, 1, 1}, [4]uint64{a.Succeeded, a.Failed, a.Cancelled, a.Rejected}, "a: succeeded, failed, cancelled, rejected")
			b := groupStats(t, e, "b")
			assert.Equal(t, [4]uint64{0, 1, 0, 0}, [4]uint64{b.Succeeded, b.Failed, b.Cancelled, b.Rejected}, "b")
			st := e.Stats()
			assert.Equal(t, st.Succeeded+st.Failed+st.Cancelled+st.Rejected, a.Succeeded+a.Failed+a.Cancelled+a.Rejected+b.Succeeded+b.Failed+b.Cancelled+b.Rejected, "the groups' counters add up to the executor's")
		})
	})
}

func TestWaitingGlobalCountsOnlyTheTasksTheGlobalCapHoldsBack(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).GlobalMaxInFlight(2).DefaultMaxConcurrencyPerGroup(1))
			var ks []*gatedTask
			var hs []*groupconc.TaskHandle[int]
			for _, key := range []string{"a", "a", "b", "c", "c"} {
				k := newGatedTask(t, 0)
				ks = append(ks, k)
				hs = append(hs, submit(t, t.Context(), e, key, key+string(rune('0'+len(hs))), k.Fn))
			}
			synctest.Wait()
			// a runs one and holds one back at its own limit; b runs; c's
			// two wait: for the global cap, and (under IsolationOff, where
			// the global permit comes first) for it too.
			a, c := groupStats(t, e, "a"), groupStats(t, e, "c")
			require.Equal(t, 1, a.Waiting)
			assert.Equal(t, 0, a.WaitingGlobal, "a waits for its own limit")
			require.Equal(t, 2, c.Waiting)
			want := 1 // under fair share, c's second waits for c's own limit
			if mode == groupconc.IsolationOff {
				want = 2
			}
			assert.Equal(t, want, c.WaitingGlobal, "c waits for the global cap")
			for _, k := range ks {
				k.Release()
			}
			quiesce(t, e, hs...)
			assert.Zero(t, groupStats(t, e, "c").WaitingGlobal)
		})
	})
}

// A raised limit hands the waiting task the permit its group's Running is
// read from: the group's concurrency permit under IsolationOff, a global
// one under fair share. From then on it is running, not waiting, though
// it starts on another goroutine. The snapshot taken as the change returns
// counts it once, and says no task waits.
func TestARaisedLimitCountsTheTaskItHandsOnOnce(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			fair := mode == groupconc.IsolationFairShare
			for range 20 {
				b := modeBuilder(mode).DefaultMaxConcurrencyPerGroup(1)
				if fair {
					b = modeBuilder(mode).DefaultMaxConcurrencyPerGroup(3).GlobalMaxInFlight(1)
				}
				e := newExecutor(t, b)
				k0, k1 := newGatedTask(t, 0), newGatedTask(t, 1)
				h0 := submit(t, t.Context(), e, "g", "0", k0.Fn)
				h1 := submit(t, t.Context(), e, "g", "1", k1.Fn)
				synctest.Wait()
				time.Sleep(time.Second) // fake clock: a task that waits has an age
				if fair {
					require.NoError(t, e.UpdatePolicy(mustBuild(t, modeBuilder(mode).DefaultMaxConcurrencyPerGroup(3).GlobalMaxInFlight(3))))
				} else {
					three := 3
					require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{MaxConcurrency: &three}))
				}
				st, _ := e.GroupStats("g")
				assert.Equal(t, 2, st.Running+st.Waiting, "%+v", st)
				assert.Equal(t, st.Waiting == 0, st.OldestWait == 0, "%+v", st)
				synctest.Wait()
				assert.True(t, k1.started.Load())
				k0.Release()
				k1.Release()
				h0.Wait()
				h1.Wait()
			}
		})
	})
}

// OldestRunning counts from when the task started, not from when it was
// submitted, under a fixed limit and an adaptive one: a task that waited a
// minute in its line and has run a second has run a second.
func TestOldestRunningCountsFromTheStart(t *testing.T) {
	for _, adaptive := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			b := builder().DefaultMaxConcurrencyPerGroup(1)
			if adaptive {
				b = adaptiveGroups(new(script), 1, 1, 0)
			}
			e := newExecutor(t, b)
			time.Sleep(time.Minute) // submissions are offsets from the executor's clock: not 0
			ahead := newGatedTask(t, 0)
			hs := []*groupconc.TaskHandle[int]{submitGated(t, e, "g", "ahead", ahead, groupconc.SubmitOptions{})}
			waits := newGatedTask(t, 0)
			hs = append(hs, submitGated(t, e, "g", "waits", waits, groupconc.SubmitOptions{}))
			time.Sleep(time.Minute)
			ahead.Release()
			synctest.Wait()
			time.Sleep(time.Second)
			assert.Equal(t, time.Second, groupStats(t, e, "g").OldestRunning, "adaptive %v", adaptive)
			waits.Release()
			quiesce(t, e, hs...)
		})
	}
}

// Each goroutine that runs tasks keeps its own record of the task it runs,
// also when records given back by many goroutines are taken again: a
// hundred tasks in a hundred groups run at once, twice, and the second time
// every group's OldestRunning is its own task's.
func TestOldestRunningOfManyGroupsAtOnceAfterManyRan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		for round := range 2 {
			gate := make(chan struct{})
			var hs []*groupconc.TaskHandle[int]
			for i := range 100 {
				hs = append(hs, submit(t, t.Context(), e, fmt.Sprint("g", i), "t", gated(gate, 0)))
			}
			time.Sleep(time.Second) // fake clock
			stats := allStats(e)
			require.Len(t, stats, 100)
			for key, gs := range stats {
				assert.Equal(t, time.Second, gs.OldestRunning, "round %d, group %s", round, key)
			}
			close(gate)
			quiesce(t, e, hs...)
		}
	})
}

// A task leaves OldestRunning as it leaves Running: as it gives its
// permits back, before its listener hears of its end and its handle
// completes. A slow OnCompleted does not keep it there.
func TestOldestRunningLeavesAnEndedTaskWithRunning(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, adaptive := range []bool{false, true} {
			synctest.Test(t, func(t *testing.T) {
				b := builder()
				if adaptive {
					b = adaptiveGroups(new(script), 2, 1, 0)
				}
				told, hold := make(chan struct{}), make(chan struct{})
				e := newExecutor(t, b.Isolation(mode).TaskLifecycleListener(groupconc.ListenerFuncs{
					Completed: func(string, string, groupconc.GroupResult[any]) {
						told <- struct{}{}
						<-hold
					},
				}))
				h := submit(t, t.Context(), e, "g", "t", func(context.Context) (int, error) {
					time.Sleep(time.Second) // fake clock: it has run a second
					return 0, nil
				})
				<-told
				st := groupStats(t, e, "g")
				assert.Zero(t, st.Running, "adaptive %v", adaptive)
				assert.Zero(t, st.OldestRunning, "adaptive %v", adaptive)
				close(hold)
				quiesce(t, e, h)
			})
		}
	})
}
