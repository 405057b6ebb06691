package groupconc_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// groupStats returns groupKey's stats, which must exist.
func groupStats(t *testing.T, e *groupconc.GroupExecutor, groupKey string) groupconc.GroupStats {
	t.Helper()
	gs, ok := e.GroupStats(groupKey)
	require.True(t, ok, "GroupStats(%q): unknown group", groupKey)
	return gs
}

// liveCounts is the live part of an ExecutorStats.
type liveCounts struct{ Groups, Running, Waiting, GlobalInFlight int }

func live(s groupconc.ExecutorStats) liveCounts {
	return liveCounts{s.Groups, s.Running, s.Waiting, s.GlobalInFlight}
}

func TestStatsCountTasksRunningAndWaitingAtEachLayer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().
			GlobalMaxInFlight(4).
			PerGroupMaxInFlight(map[string]int{"a": 2}).
			DefaultMaxConcurrencyPerGroup(1))
		tasks := map[string]*gatedTask{}
		var hs []*groupconc.TaskHandle[int]
		submitTo := func(group, id string) {
			tasks[id] = newGatedTask(t, len(hs))
			hs = append(hs, submit(t, t.Context(), e, group, id, tasks[id].Fn))
			synctest.Wait() // one at a time, so the FIFO order is the submit order
		}
		submitTo("a", "a1") // global 1, bulkhead 1, concurrency: runs
		submitTo("a", "a2") // global 2, bulkhead 2, waits for concurrency
		submitTo("a", "a3") // global 3, waits at the bulkhead
		submitTo("b", "b1") // global 4, no bulkhead: runs
		submitTo("a", "a4") // waits at the global layer
		submitTo("b", "b2") // waits at the global layer

		assert.Equal(t, groupconc.GroupStats{
			GroupKey: "a", Running: 1, Waiting: 3, InFlight: 2, RunningCost: 1, WaitingGlobal: 1, // a4
			MaxConcurrency: 1, MaxInFlight: 2, QueueThreshold: groupconc.Unlimited, Weight: 1,
		}, groupStats(t, e, "a"))
		assert.Equal(t, groupconc.GroupStats{
			GroupKey: "b", Running: 1, Waiting: 1, InFlight: 1, RunningCost: 1, WaitingGlobal: 1, // b2
			MaxConcurrency: 1, MaxInFlight: groupconc.Unlimited, QueueThreshold: groupconc.Unlimited, Weight: 1,
		}, groupStats(t, e, "b"))
		s := e.Stats()
		assert.Equal(t, liveCounts{Groups: 2, Running: 2, Waiting: 4, GlobalInFlight: 4}, live(s))
		assert.Equal(t, 4, s.GlobalMaxInFlight)
		assert.Equal(t, uint64(6), s.Submitted)

		// a1 ends: a2 runs, a3 moves on to wait for concurrency, a4 takes
		// a1's global permit and waits at the bulkhead.
		tasks["a1"].Release()
		synctest.Wait()
		require.True(t, tasks["a2"].started.Load())
		gs := groupStats(t, e, "a")
		assert.Equal(t, [3]int{1, 2, 2}, [3]int{gs.Running, gs.Waiting, gs.InFlight}, "a: running, waiting, in flight")
		assert.Equal(t, liveCounts{Groups: 2, Running: 2, Waiting: 3, GlobalInFlight: 4}, live(e.Stats()))

		// b1 ends: b2 gets its global permit and runs.
		tasks["b1"].Release()
		synctest.Wait()
		require.True(t, tasks["b2"].started.Load())
		gs = groupStats(t, e, "b")
		assert.Equal(t, [3]int{1, 0, 1}, [3]int{gs.Running, gs.Waiting, gs.InFlight}, "b: running, waiting, in flight")
		assert.Equal(t, liveCounts{Groups: 2, Running: 2, Waiting: 2, GlobalInFlight: 4}, live(e.Stats()))

		for _, k := range tasks {
			k.Release()
		}
		quiesce(t, e, hs...)
		s = e.Stats()
		assert.Equal(t, liveCounts{Groups: 2}, live(s))
		assert.Equal(t, uint64(6), s.Succeeded)
	})
}

func TestStatsCountInFlightPastAnUnlimitedBulkhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder()) // concurrency 1, nothing else bounded
		var ks []*gatedTask
		var hs []*groupconc.TaskHandle[int]
		for _, id := range []string{"a1", "a2", "a3"} {
			k := newGatedTask(t, 0)
			ks = append(ks, k)
			hs = append(hs, submit(t, t.Context(), e, "a", id, k.Fn))
		}
		synctest.Wait()
		assert.Equal(t, groupconc.GroupStats{
			GroupKey: "a", Running: 1, Waiting: 2, InFlight: 3, RunningCost: 1,
			MaxConcurrency: 1, MaxInFlight: groupconc.Unlimited, QueueThreshold: groupconc.Unlimited, Weight: 1,
		}, groupStats(t, e, "a"))
		s := e.Stats()
		assert.Equal(t, liveCounts{Groups: 1, Running: 1, Waiting: 2, GlobalInFlight: 3}, live(s),
			"tasks past an Unlimited global layer are in flight too")
		assert.Equal(t, groupconc.Unlimited, s.GlobalMaxInFlight)
		for _, k := range ks {
			k.Release()
		}
		quiesce(t, e, hs...)
		assert.Equal(t, liveCounts{Groups: 1}, live(e.Stats()))
	})
}

func TestStatsOutcomeCountersAreExactAfterAMixedBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().
			DefaultMaxConcurrencyPerGroup(1).
			PerGroupQueueThreshold(map[string]int{"a": 1}))
		errBoom := errors.New("boom")
		a1, a2 := newGatedTask(t, 1), newGatedTask(t, 2)
		hA1 := submit(t, t.Context(), e, "a", "a1", a1.Fn) // succeeds
		synctest.Wait()
		hA2 := submit(t, t.Context(), e, "a", "a2", a2.Fn) // waits, then cancelled by its handle
		synctest.Wait()
		hA3 := submit(t, t.Context(), e, "a", "a3", a2.Fn) // rejected: a's queue is full
		hOK := submit(t, t.Context(), e, "b", "ok", func(context.Context) (int, error) { return 1, nil })
		hErr := submit(t, t.Context(), e, "b", "err", func(context.Context) (int, error) { return 0, errBoom })
		hPanic := submit(t, t.Context(), e, "b", "panic", func(context.Context) (int, error) { panic("boom") })
		done, cancel := context.WithCancel(t.Context())
		cancel()
		hDone := submit(t, done, e, "c", "done-ctx", a1.Fn) // context done before it could run
		running, stop := context.WithCancel(t.Context())
		defer stop()
		hStopped := submit(t, running, e, "d", "stopped", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		})
		synctest.Wait()
		require.True(t, hA2.Cancel())
		stop()
		a1.Release()
		a2.Release()
		hs := []*groupconc.TaskHandle[int]{hA1, hA2, hA3, hOK, hErr, hPanic, hDone, hStopped}
		quiesce(t, e, hs...)

		want := map[*groupconc.TaskHandle[int]]groupconc.TaskStatus{
			hA1: groupconc.StatusSuccess, hOK: groupconc.StatusSuccess,
			hErr: groupconc.StatusFailed, hPanic: groupconc.StatusFailed,
			hA2: groupconc.StatusCancelled, hDone: groupconc.StatusCancelled, hStopped: groupconc.StatusCancelled,
			hA3: groupconc.StatusRejected,
		}
		for h, status := range want {
			assert.Equal(t, status, h.Wait().Status, "task %s/%s", h.GroupKey(), h.TaskID())
		}
		s := e.Stats()
		assert.Equal(t, uint64(8), s.Submitted, "submitted")
		assert.Equal(t, uint64(2), s.Succeeded, "succeeded")
		assert.Equal(t, uint64(2), s.Failed, "failed")
		assert.Equal(t, uint64(3), s.Cancelled, "cancelled")
		assert.Equal(t, uint64(1), s.Rejected, "rejected")
		assert.Equal(t, s.Submitted, s.Succeeded+s.Failed+s.Cancelled+s.Rejected, "outcomes")
		assert.Equal(t, liveCounts{Groups: 4}, live(s))
	})
}

func TestGroupStatsOfAnUnknownGroupReportsFalse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		t.Cleanup(func() { _ = e.Close() })
		gs, ok := e.GroupStats("nope")
		assert.False(t, ok)
		assert.Equal(t, groupconc.GroupStats{}, gs)
		assert.Zero(t, e.Stats().Groups)

		submit(t, t.Context(), e, "a", "a1", func(context.Context) (int, error) { return 1, nil }).Wait()
		_, ok = e.GroupStats("a")
		assert.True(t, ok, "a is known once used")
		_, ok = e.GroupStats("nope")
		assert.False(t, ok, "using a does not make other groups known")
		assert.Equal(t, 1, e.Stats().Groups)
	})
}

func TestEvictedGroupIsGoneFromStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		limit := 1
		e := newExecutor(t, groupconc.NewPolicyBuilder().
			ConcurrencyResolver(func(string) int { return limit }))
		noop := func(context.Context) (int, error) { return 1, nil }
		submit(t, t.Context(), e, "a", "a1", noop).Wait()
		submit(t, t.Context(), e, "b", "b1", noop).Wait()
		require.Equal(t, 2, e.Stats().Groups)
		require.Equal(t, 1, groupStats(t, e, "a").MaxConcurrency)

		e.EvictGroup("a")
		_, ok := e.GroupStats("a")
		assert.False(t, ok, "an evicted group is unknown")
		assert.Equal(t, 1, e.Stats().Groups, "groups after eviction")
		_, ok = e.GroupStats("b")
		assert.True(t, ok, "other groups stay")

		// The next task resolves a's limits again.
		limit = 3
		submit(t, t.Context(), e, "a", "a2", noop).Wait()
		assert.Equal(t, 3, groupStats(t, e, "a").MaxConcurrency)
		assert.Equal(t, 2, e.Stats().Groups)
		synctest.Wait()
		require.NoError(t, e.Quiescent())
	})
}

func TestTaskLeavesRunningBeforeItsHandleCompletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// OnCompleted, which runs before the handle completes, holds the
		// task's goroutine until the test has read the stats: the permits
		// must be given back by then.
		hold := make(chan struct{})
		e := newExecutor(t, groupconc.NewPolicyBuilder().
			GlobalMaxInFlight(1).
			PerGroupMaxInFlight(map[string]int{"a": 1}).
			TaskLifecycleListener(groupconc.ListenerFuncs{
				Completed: func(string, string, groupconc.GroupResult[any]) { <-hold },
			}))
		for range 3 {
			k := newGatedTask(t, 1)
			h := submit(t, t.Context(), e, "a", "a1", k.Fn)
			synctest.Wait()
			gs := groupStats(t, e, "a")
			require.Equal(t, [2]int{1, 1}, [2]int{gs.Running, gs.InFlight}, "running, in flight")
			require.Equal(t, 1, e.Stats().GlobalInFlight)

			k.Release()
			synctest.Wait() // the task's goroutine is now parked in OnCompleted
			require.False(t, h.IsDone(), "the handle completed before OnCompleted returned")
			gs = groupStats(t, e, "a")
			assert.Equal(t, [3]int{0, 0, 0}, [3]int{gs.Running, gs.Waiting, gs.InFlight}, "running, waiting, in flight before the handle completes")
			assert.Equal(t, liveCounts{Groups: 1}, live(e.Stats()), "before the handle completes")
			hold <- struct{}{}
			<-h.Done()
		}
		synctest.Wait()
		require.NoError(t, e.Quiescent())
	})
}
