package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

func TestCancelledGroupWaiterNeverLeaksItsQueueSlot(t *testing.T) {
	const n = 3
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().
			DefaultMaxConcurrencyPerGroup(1).
			PerGroupQueueThreshold(map[string]int{"a": n}))
		running := newGatedTask(t, 0) // ignores its context: survives ShutdownGroup
		hRunning := submit(t, t.Context(), e, "a", "running", running.Fn)
		synctest.Wait()
		require.True(t, running.started.Load())
		all := []*groupconc.TaskHandle[int]{hRunning}

		// fill submits n waiters, each with a context of its own, requires
		// them waiting and the next submission rejected: the queue is full.
		fill := func(prefix string) ([]*groupconc.TaskHandle[int], []context.CancelFunc) {
			t.Helper()
			var (
				hs      []*groupconc.TaskHandle[int]
				cancels []context.CancelFunc
			)
			for i := range n {
				w := newGatedTask(t, 0)
				w.Release() // returns at once when it runs
				ctx, cancel := context.WithCancel(t.Context())
				t.Cleanup(cancel)
				hs = append(hs, submit(t, ctx, e, "a", prefix+string(rune('1'+i)), w.Fn))
				cancels = append(cancels, cancel)
			}
			synctest.Wait()
			for _, h := range hs {
				require.False(t, h.IsDone(), "%s: complete (%v), want waiting", h.TaskID(), statusIfDone(h))
			}
			over := newGatedTask(t, 0)
			requireRejected(t, submit(t, t.Context(), e, "a", prefix+"-over", over.Fn), "group")
			all = append(all, hs...)
			return hs, cancels
		}

		// Cancel, and the task's own context.
		first, cancels := fill("first")
		require.True(t, first[0].Cancel())
		for _, cancel := range cancels[1:] {
			cancel()
		}
		synctest.Wait()
		for _, h := range first {
			assert.Equal(t, groupconc.StatusCancelled, doneResult(t, h).Status, "task %s", h.TaskID())
		}

		// ShutdownGroup: n waiters, admitted again in the freed slots.
		shut, _ := fill("shut")
		e.ShutdownGroup("a")
		synctest.Wait()
		for _, h := range shut {
			assert.Equal(t, groupconc.StatusCancelled, doneResult(t, h).Status, "task %s", h.TaskID())
		}
		require.False(t, hRunning.IsDone(), "the running task ignores its context")

		// Every slot is free again: n new waiters are admitted.
		last, _ := fill("last")

		running.Release()
		quiesce(t, e, all...)
		assert.Equal(t, groupconc.StatusSuccess, hRunning.Wait().Status)
		for _, h := range last {
			assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, "task %s", h.TaskID())
		}
	})
}

func TestCancelledGlobalWaiterNeverLeaksItsGlobalQueueSlot(t *testing.T) {
	const n = 3
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().
			GlobalMaxInFlight(1).
			GlobalQueueThreshold(n))
		running := newGatedTask(t, 0)
		hRunning := submit(t, t.Context(), e, "x", "running", running.Fn)
		synctest.Wait()
		require.True(t, running.started.Load())

		noop := func(context.Context) (int, error) { return 1, nil }
		wHandle := submit(t, t.Context(), e, "w1", "by-handle", noop)
		ctx, cancel := context.WithCancel(t.Context())
		wCtx := submit(t, ctx, e, "w2", "by-ctx", noop)
		wGroup := submit(t, t.Context(), e, "w3", "by-group", noop)
		synctest.Wait()
		for _, h := range []*groupconc.TaskHandle[int]{wHandle, wCtx, wGroup} {
			require.False(t, h.IsDone(), "%s: complete, want waiting", h.TaskID())
		}
		requireRejected(t, submit(t, t.Context(), e, "w4", "over", noop), "global")

		require.True(t, wHandle.Cancel())
		cancel()
		e.ShutdownGroup("w3")
		synctest.Wait()
		for _, h := range []*groupconc.TaskHandle[int]{wHandle, wCtx, wGroup} {
			assert.Equal(t, groupconc.StatusCancelled, doneResult(t, h).Status, "task %s", h.TaskID())
		}

		var again []*groupconc.TaskHandle[int]
		for i := range n {
			again = append(again, submit(t, t.Context(), e, "n"+string(rune('1'+i)), "again", noop))
		}
		synctest.Wait()
		for _, h := range again {
			require.False(t, h.IsDone(), "%s/%s: complete (%v), want waiting", h.GroupKey(), h.TaskID(), statusIfDone(h))
		}
		requireRejected(t, submit(t, t.Context(), e, "n4", "over", noop), "global")

		running.Release()
		quiesce(t, e, append(again, hRunning, wHandle, wCtx, wGroup)...)
		for _, h := range again {
			assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, "task %s/%s", h.GroupKey(), h.TaskID())
		}
	})
}

func TestTaskThatWaitedAtTheBulkheadKeepsOneQueueSlotUntilItHoldsTheConcurrencyPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Bulkhead 2, concurrency 1, 2 queue slots shared by both layers.
		e := newExecutor(t, groupconc.NewPolicyBuilder().
			PerGroupMaxInFlight(map[string]int{"a": 2}).
			DefaultMaxConcurrencyPerGroup(1).
			PerGroupQueueThreshold(map[string]int{"a": 2}))
		a1, a2, a3 := newGatedTask(t, 1), newGatedTask(t, 2), newGatedTask(t, 3)
		hA1 := submit(t, t.Context(), e, "a", "a1", a1.Fn) // runs
		synctest.Wait()
		hA2 := submit(t, t.Context(), e, "a", "a2", a2.Fn) // past the bulkhead, waits for concurrency
		synctest.Wait()
		hA3 := submit(t, t.Context(), e, "a", "a3", a3.Fn) // waits at the bulkhead
		synctest.Wait()
		require.True(t, a1.started.Load())
		requireWaiting(t, hA2, a2)
		requireWaiting(t, hA3, a3)
		requireRejected(t, submit(t, t.Context(), e, "a", "full", a3.Fn), "group")
		gs, ok := e.GroupStats("a")
		require.True(t, ok)
		require.Equal(t, 1, gs.Running, "running")
		require.Equal(t, 2, gs.Waiting, "waiting")
		require.Equal(t, 2, gs.InFlight, "in flight")

		// a2 leaves: its bulkhead permit goes to a3, which must now wait for
		// the concurrency permit a1 holds, on the slot it already has.
		require.True(t, hA2.Cancel())
		synctest.Wait()
		requireWaiting(t, hA3, a3)
		gs, _ = e.GroupStats("a")
		assert.Equal(t, 2, gs.InFlight, "in flight (a1, a3)")
		assert.Equal(t, 1, gs.Waiting, "waiting (a3)")

		// a3 holds exactly one slot: one newcomer may wait, the next may not.
		a4 := newGatedTask(t, 4)
		hA4 := submit(t, t.Context(), e, "a", "a4", a4.Fn)
		synctest.Wait()
		requireWaiting(t, hA4, a4)
		requireRejected(t, submit(t, t.Context(), e, "a", "over", a4.Fn), "group")

		a1.Release()
		synctest.Wait()
		assert.True(t, a3.started.Load(), "a3 should run once a1 is done")
		a3.Release()
		a4.Release()
		quiesce(t, e, hA1, hA2, hA3, hA4)
		assert.Equal(t, groupconc.StatusSuccess, hA3.Wait().Status)
		assert.Equal(t, groupconc.StatusSuccess, hA4.Wait().Status)
	})
}
