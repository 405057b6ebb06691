package groupconc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

func TestFairShareGroupQueueThresholdCountsTheGlobalWaitAndRejectsOnlyInsideSubmit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
			GlobalMaxInFlight(1).
			PerGroupMaxConcurrency(map[string]int{"a": 5}).
			DefaultQueueThresholdPerGroup(2).
			TaskLifecycleListener(rec))
		holder := newGatedTask(t, 0)
		submit(t, t.Context(), e, "x", "x0", holder.Fn)
		synctest.Wait()
		require.True(t, holder.started.Load())

		// a0 and a1 hold a's concurrency permits and wait for the global one.
		a0, a1 := newGatedTask(t, 0), newGatedTask(t, 1)
		h0 := submit(t, t.Context(), e, "a", "a0", a0.Fn)
		h1 := submit(t, t.Context(), e, "a", "a1", a1.Fn)
		synctest.Wait()
		requireWaiting(t, h0, a0)
		requireWaiting(t, h1, a1)
		gs := groupStats(t, e, "a")
		assert.Equal(t, [3]int{0, 2, 2}, [3]int{gs.Running, gs.Waiting, gs.InFlight}, "a: running, waiting, in flight")

		// The third finds both slots taken by the global wait: rejected
		// before Submit returns, with no synctest.Wait in between.
		var ran bool
		h2, err := groupconc.Submit(t.Context(), e, "a", "a2", func(context.Context) (int, error) { ran = true; return 0, nil })
		require.NoError(t, err)
		require.True(t, h2.IsDone(), "a2: handle not complete when Submit returned, want REJECTED")
		ctx, cancel := context.WithCancel(t.Context())
		cancel() // an Await that had to wait would return CANCELLED
		r, err := h2.Await(ctx)
		assert.Equal(t, groupconc.StatusRejected, r.Status)
		var re *groupconc.RejectedError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, groupconc.ReasonGroupQueueFull, re.Reason)
		assert.Equal(t, []string{evSubmitted, evRejected}, rec.Events("a", "a2"))

		holder.Release()
		a0.Release()
		a1.Release()
		quiesce(t, e, h0, h1)
		assert.False(t, ran, "a rejected task ran")
		assert.Equal(t, groupconc.StatusSuccess, h0.Wait().Status)
		assert.Equal(t, groupconc.StatusSuccess, h1.Wait().Status)
	})
}

func TestFairShareNeverRejectsATaskAfterItBeganToWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
			GlobalMaxInFlight(2).
			DefaultMaxConcurrencyPerGroup(2).DefaultMaxInFlightPerGroup(3).
			DefaultQueueThresholdPerGroup(2))
		seed := rand.Uint64()
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 0))
		var tasks []*gatedTask
		var hs []*groupconc.TaskHandle[int]
		atSubmit := map[*groupconc.TaskHandle[int]]bool{} // done when Submit returned
		for i := range 200 {
			if rng.IntN(3) == 0 {
				for _, k := range tasks {
					if k.started.Load() && rng.IntN(2) == 0 {
						k.Release()
					}
				}
				synctest.Wait()
			}
			k := newGatedTask(t, i)
			h := submit(t, t.Context(), e, fmt.Sprint("g", rng.IntN(3)), fmt.Sprint(i), k.Fn)
			atSubmit[h] = h.IsDone()
			tasks, hs = append(tasks, k), append(hs, h)
		}
		for _, k := range tasks {
			k.Release()
		}
		rejected := 0
		for i, h := range hs {
			r := h.Wait()
			if r.Status == groupconc.StatusRejected {
				rejected++
				assert.True(t, atSubmit[h], "task %d rejected after Submit returned", i)
			} else {
				assert.Equal(t, groupconc.StatusSuccess, r.Status, "task %d", i)
			}
		}
		assert.Positive(t, rejected, "no rejection: the test did not fill the thresholds")
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
	})
}

func TestFairShareStatsCountOnlyRunningTasksAsGlobalInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
			GlobalMaxInFlight(3).
			PerGroupMaxConcurrency(map[string]int{"a": 2}).
			PerGroupMaxInFlight(map[string]int{"a": 3}).
			PerGroupWeight(map[string]int{"a": 2}))
		var tasks []*gatedTask
		submit := func(key string) {
			k := newGatedTask(t, 0)
			tasks = append(tasks, k)
			submit(t, t.Context(), e, key, fmt.Sprint(key, len(tasks)), k.Fn)
			synctest.Wait()
		}
		submit("a") // runs
		submit("a") // runs
		submit("a") // waits for a's concurrency permit, past the bulkhead
		submit("a") // waits at a's bulkhead
		submit("b") // runs: the 3rd global permit
		submit("b") // waits for b's concurrency permit
		submit("c") // holds c's permits, waits for a global one

		assert.Equal(t, groupconc.GroupStats{
			GroupKey: "a", Running: 2, Waiting: 2, InFlight: 3, RunningCost: 2,
			MaxConcurrency: 2, MaxInFlight: 3, QueueThreshold: groupconc.Unlimited, Weight: 2,
		}, groupStats(t, e, "a"))
		assert.Equal(t, groupconc.GroupStats{
			GroupKey: "b", Running: 1, Waiting: 1, InFlight: 2, RunningCost: 1,
			MaxConcurrency: 1, MaxInFlight: groupconc.Unlimited, QueueThreshold: groupconc.Unlimited, Weight: 1,
		}, groupStats(t, e, "b"))
		assert.Equal(t, groupconc.GroupStats{
			GroupKey: "c", Running: 0, Waiting: 1, InFlight: 1, WaitingGlobal: 1, // holds its own permits
			MaxConcurrency: 1, MaxInFlight: groupconc.Unlimited, QueueThreshold: groupconc.Unlimited, Weight: 1,
		}, groupStats(t, e, "c"))
		s := e.Stats()
		assert.Equal(t, liveCounts{Groups: 3, Running: 3, Waiting: 4, GlobalInFlight: 3}, live(s))
		assert.Equal(t, 3, s.GlobalMaxInFlight)

		for _, k := range tasks {
			k.Release()
		}
		synctest.Wait()
		assert.Equal(t, liveCounts{Groups: 3}, live(e.Stats()))
		assert.NoError(t, e.Quiescent())
	})
}
