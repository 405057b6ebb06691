package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

func TestGroupQueueThresholdZeroRejectsOnlyATaskThatWouldHaveToWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().
			DefaultMaxConcurrencyPerGroup(1).
			DefaultQueueThresholdPerGroup(0))
		first := newGatedTask(t, 1)
		hFirst := submit(t, t.Context(), e, "a", "first", first.Fn)
		synctest.Wait()
		require.True(t, first.started.Load(), "a task that can start at once must run under threshold 0")
		require.False(t, hFirst.IsDone())

		second := newGatedTask(t, 2)
		hSecond := submit(t, t.Context(), e, "a", "second", second.Fn)
		synctest.Wait()
		requireRejected(t, hSecond, "group")
		assert.False(t, second.started.Load(), "a rejected task must not run")

		// The threshold is per group: another group's task starts at once.
		other := newGatedTask(t, 3)
		hOther := submit(t, t.Context(), e, "b", "other", other.Fn)
		synctest.Wait()
		assert.True(t, other.started.Load(), "group b's task should start: group a's threshold is not b's")

		first.Release()
		other.Release()
		quiesce(t, e, hFirst, hOther)
		assert.Equal(t, groupconc.StatusSuccess, hFirst.Wait().Status)

		// Once the group is free again, a task can start at once and is accepted.
		third := newGatedTask(t, 4)
		third.Release()
		assert.Equal(t, groupconc.StatusSuccess, submit(t, t.Context(), e, "a", "third", third.Fn).Wait().Status)
	})
}

func TestGlobalQueueThresholdZeroRejectsOnlyATaskThatWouldHaveToWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().
			GlobalMaxInFlight(1).
			GlobalQueueThreshold(0))
		first := newGatedTask(t, 1)
		hFirst := submit(t, t.Context(), e, "a", "first", first.Fn)
		synctest.Wait()
		require.True(t, first.started.Load(), "a task that can start at once must run under global threshold 0")

		second := newGatedTask(t, 2)
		hSecond := submit(t, t.Context(), e, "b", "second", second.Fn)
		synctest.Wait()
		requireRejected(t, hSecond, "global")
		assert.False(t, second.started.Load(), "a rejected task must not run")

		first.Release()
		quiesce(t, e, hFirst)

		third := newGatedTask(t, 3)
		hThird := submit(t, t.Context(), e, "b", "third", third.Fn)
		synctest.Wait()
		assert.True(t, third.started.Load(), "with the global permit free, a task should start at once")
		third.Release()
		quiesce(t, e, hThird)
		assert.Equal(t, groupconc.StatusSuccess, hThird.Wait().Status)
	})
}

func TestGroupQueueThresholdNAdmitsExactlyNWaiters(t *testing.T) {
	const n = 3
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().
			DefaultMaxConcurrencyPerGroup(1).
			PerGroupQueueThreshold(map[string]int{"a": n}))
		running := newGatedTask(t, 0)
		hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "a", "running", running.Fn)}
		synctest.Wait()
		require.True(t, running.started.Load())

		waiters := make([]*gatedTask, n)
		for i := range waiters {
			waiters[i] = newGatedTask(t, i+1)
			hs = append(hs, submit(t, t.Context(), e, "a", "waiter"+string(rune('1'+i)), waiters[i].Fn))
		}
		synctest.Wait()
		for i, k := range waiters {
			requireWaiting(t, hs[i+1], k)
		}
		gs, ok := e.GroupStats("a")
		require.True(t, ok)
		assert.Equal(t, n, gs.Waiting, "waiting")

		extra := newGatedTask(t, 99)
		hExtra := submit(t, t.Context(), e, "a", "extra", extra.Fn)
		synctest.Wait()
		requireRejected(t, hExtra, "group")

		running.Release()
		for _, k := range waiters {
			k.Release()
		}
		quiesce(t, e, hs...)
		for i, h := range hs {
			r := h.Wait()
			assert.Equal(t, groupconc.StatusSuccess, r.Status, "task %s", h.TaskID())
			assert.Equal(t, i, r.Value, "task %s", h.TaskID())
		}
		assert.False(t, extra.started.Load())
	})
}

func TestGlobalQueueThresholdNAdmitsExactlyNWaiters(t *testing.T) {
	const n = 2
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().
			GlobalMaxInFlight(1).
			GlobalQueueThreshold(n))
		running := newGatedTask(t, 0)
		hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "x", "running", running.Fn)}
		synctest.Wait()
		require.True(t, running.started.Load())

		// Waiters of distinct groups, so only the global threshold applies.
		waiters := make([]*gatedTask, n)
		for i := range waiters {
			waiters[i] = newGatedTask(t, i+1)
			hs = append(hs, submit(t, t.Context(), e, "g"+string(rune('1'+i)), "waiter", waiters[i].Fn))
		}
		synctest.Wait()
		for i, k := range waiters {
			requireWaiting(t, hs[i+1], k)
		}
		assert.Equal(t, n, e.Stats().Waiting, "waiting")

		extra := newGatedTask(t, 99)
		hExtra := submit(t, t.Context(), e, "extra", "extra", extra.Fn)
		synctest.Wait()
		requireRejected(t, hExtra, "global")

		running.Release()
		for _, k := range waiters {
			k.Release()
		}
		quiesce(t, e, hs...)
		for _, h := range hs {
			assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, "task %s/%s", h.GroupKey(), h.TaskID())
		}
		assert.False(t, extra.started.Load())
	})
}

func TestTaskRejectedAtTheConcurrencyLayerGivesBackItsGlobalAndBulkheadPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// a2 takes the second global permit and the second bulkhead permit of
		// a, then finds a's concurrency permit taken and may not wait.
		e := newExecutor(t, groupconc.NewPolicyBuilder().
			GlobalMaxInFlight(2).
			PerGroupMaxInFlight(map[string]int{"a": 2}).
			DefaultMaxConcurrencyPerGroup(1).
			PerGroupQueueThreshold(map[string]int{"a": 0}))
		a1 := newGatedTask(t, 1)
		hA1 := submit(t, t.Context(), e, "a", "a1", a1.Fn)
		synctest.Wait()
		require.True(t, a1.started.Load())

		a2 := newGatedTask(t, 2)
		hA2 := submit(t, t.Context(), e, "a", "a2", a2.Fn)
		synctest.Wait()
		requireRejected(t, hA2, "group")

		// Had a2 kept its global permit, b1 would wait for it.
		b1 := newGatedTask(t, 3)
		hB1 := submit(t, t.Context(), e, "b", "b1", b1.Fn)
		synctest.Wait()
		assert.True(t, b1.started.Load(), "b1 should start at once: the rejected a2 must give back its global permit")
		assert.Equal(t, 2, e.Stats().GlobalInFlight, "global in flight (a1, b1)")
		gs, ok := e.GroupStats("a")
		require.True(t, ok)
		assert.Equal(t, 1, gs.InFlight, "a's in flight: a2 must give back its bulkhead permit")
		assert.Equal(t, 0, gs.Waiting, "a's waiting")

		a1.Release()
		b1.Release()
		quiesce(t, e, hA1, hB1)
	})
}

func TestTaskRejectedAfterWaitingForTheGlobalPermitGivesItBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		e := newExecutor(t, groupconc.NewPolicyBuilder().
			GlobalMaxInFlight(2).
			DefaultMaxConcurrencyPerGroup(1).
			PerGroupQueueThreshold(map[string]int{"a": 0}).
			TaskLifecycleListener(rec))
		a1 := newGatedTask(t, 1)
		x1 := newGatedTask(t, 2)
		hA1 := submit(t, t.Context(), e, "a", "a1", a1.Fn)
		hX1 := submit(t, t.Context(), e, "x", "x1", x1.Fn)
		synctest.Wait()
		require.True(t, a1.started.Load())
		require.True(t, x1.started.Load())

		// a2 waits for a global permit (no global threshold), gets x1's, then
		// meets a's concurrency limit with a queue threshold of 0.
		a2 := newGatedTask(t, 3)
		hA2 := submit(t, t.Context(), e, "a", "a2", a2.Fn)
		synctest.Wait()
		requireWaiting(t, hA2, a2)
		x1.Release()
		synctest.Wait()
		re := requireRejected(t, hA2, "group")
		assert.False(t, a2.started.Load())
		assert.Equal(t, []string{evSubmitted, evRejected}, rec.Events("a", "a2"), "a2's events")
		assert.Equal(t, re.Reason, rec.Reason("a", "a2"), "OnRejected reason")

		b1 := newGatedTask(t, 4)
		hB1 := submit(t, t.Context(), e, "b", "b1", b1.Fn)
		synctest.Wait()
		assert.True(t, b1.started.Load(), "b1 should start at once: the rejected a2 must give back the global permit it waited for")

		// The cap binds: with a1 and b1 running, a third group waits.
		c1 := newGatedTask(t, 5)
		hC1 := submit(t, t.Context(), e, "c", "c1", c1.Fn)
		synctest.Wait()
		requireWaiting(t, hC1, c1)
		assert.Equal(t, 2, e.Stats().GlobalInFlight, "global in flight")

		a1.Release()
		b1.Release()
		c1.Release()
		quiesce(t, e, hA1, hX1, hB1, hC1)
		assert.Equal(t, groupconc.StatusSuccess, hC1.Wait().Status)
	})
}

func TestCallerRunsTaskHoldsNoPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().
			GlobalMaxInFlight(2).
			DefaultMaxConcurrencyPerGroup(1).
			PerGroupQueueThreshold(map[string]int{"a": 0}).
			RejectionPolicy(groupconc.RejectCallerRuns))
		a1 := newGatedTask(t, 1)
		hA1 := submit(t, t.Context(), e, "a", "a1", a1.Fn)
		synctest.Wait()
		require.True(t, a1.started.Load())

		a2 := newGatedTask(t, 2)
		hA2 := submit(t, t.Context(), e, "a", "a2", a2.Fn)
		synctest.Wait()
		require.True(t, a2.started.Load(), "the rejected a2 should run at once under RejectCallerRuns")
		require.False(t, hA2.IsDone())
		gs, ok := e.GroupStats("a")
		require.True(t, ok)
		assert.Equal(t, 1, gs.Running, "a's running: a caller-runs task holds no concurrency permit")
		assert.LessOrEqual(t, gs.Running, gs.MaxConcurrency)
		assert.Equal(t, 1, gs.InFlight, "a's in flight")
		assert.Equal(t, 0, gs.Waiting, "a's waiting")
		assert.Equal(t, 1, e.Stats().GlobalInFlight, "global in flight")

		// Were a2 holding a global permit, b1 would wait for one.
		b1 := newGatedTask(t, 3)
		hB1 := submit(t, t.Context(), e, "b", "b1", b1.Fn)
		synctest.Wait()
		assert.True(t, b1.started.Load(), "b1 should start at once while the caller-runs a2 runs")

		c1 := newGatedTask(t, 4)
		hC1 := submit(t, t.Context(), e, "c", "c1", c1.Fn)
		synctest.Wait()
		requireWaiting(t, hC1, c1) // the global cap is full with a1 and b1

		a2.Release()
		synctest.Wait()
		r := doneResult(t, hA2)
		assert.Equal(t, groupconc.StatusSuccess, r.Status)
		assert.Equal(t, 2, r.Value)
		requireWaiting(t, hC1, c1) // a2 gave back nothing it did not hold

		a1.Release()
		b1.Release()
		c1.Release()
		quiesce(t, e, hA1, hA2, hB1, hC1)
	})
}
