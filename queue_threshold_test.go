package groupconc_test

import (
	"context"
	"errors"
	"sync/atomic"
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

// busyGroupA builds an executor from b with every group limited to one
// running task and no waiting one, and fills group a with a gated task
// that has started. It returns the executor and that task with its handle.
func busyGroupA(t *testing.T, b *groupconc.PolicyBuilder) (*groupconc.GroupExecutor, *gatedTask, *groupconc.TaskHandle[int]) {
	t.Helper()
	e := newExecutor(t, b.DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0))
	busy := newGatedTask(t, 1)
	hBusy := submit(t, t.Context(), e, "a", "busy", busy.Fn)
	synctest.Wait()
	require.True(t, busy.started.Load())
	return e, busy, hBusy
}

// rejectedByHandler runs, in a bubble, one task of group a that is
// rejected (group a is busy and may not queue) under a policy whose handler
// is h. It returns the result of the rejected task, whether its function
// ran, its listener events, and its Await error.
func rejectedByHandler(t *testing.T, policy groupconc.RejectionPolicy, h groupconc.RejectionHandler) (groupconc.GroupResult[int], bool, []string, error) {
	t.Helper()
	rec := newRecorder()
	e, busy, hBusy := busyGroupA(t, groupconc.NewPolicyBuilder().
		RejectionPolicy(policy).
		RejectionHandler(h).
		TaskLifecycleListener(rec))

	rejected := newGatedTask(t, 7)
	rejected.Release() // returns at once if the handler runs it
	hRejected := submit(t, t.Context(), e, "a", "rejected", rejected.Fn)
	r, err := hRejected.Await(t.Context())
	busy.Release()
	quiesce(t, e, hBusy, hRejected)
	return r, rejected.started.Load(), rec.Events("a", "rejected"), err
}

func TestRejectionHandlerReplacesTheRejectionPolicy(t *testing.T) {
	for _, policy := range []groupconc.RejectionPolicy{groupconc.RejectAbort, groupconc.RejectDiscard, groupconc.RejectCallerRuns} {
		t.Run(policy.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				r, ran, events, err := rejectedByHandler(t, policy, func(_ context.Context, rej *groupconc.Rejection) (any, error) {
					calls.Add(1)
					assert.Equal(t, "a", rej.GroupKey)
					assert.Equal(t, "rejected", rej.TaskID)
					assert.Contains(t, rej.Reason, "group")
					return 42, nil
				})
				assert.Equal(t, int32(1), calls.Load(), "handler calls")
				require.NoError(t, err)
				assert.Equal(t, groupconc.StatusSuccess, r.Status, "err %v", r.Err)
				assert.Equal(t, 42, r.Value)
				assert.False(t, ran, "the handler did not call Run: the task must not run")
				assert.Equal(t, []string{evSubmitted, evRejected}, events)
			})
		})
	}
}

func TestRejectionHandlerOutcomeMapsToTheTaskResult(t *testing.T) {
	errBoom := errors.New("boom")
	cases := []struct {
		name    string
		handler groupconc.RejectionHandler
		check   func(t *testing.T, r groupconc.GroupResult[int], awaitErr error)
		runs    bool
	}{
		{
			name:    "value",
			handler: func(context.Context, *groupconc.Rejection) (any, error) { return 42, nil },
			check: func(t *testing.T, r groupconc.GroupResult[int], awaitErr error) {
				assert.NoError(t, awaitErr)
				assert.Equal(t, groupconc.StatusSuccess, r.Status, "err %v", r.Err)
				assert.Equal(t, 42, r.Value)
				assert.NoError(t, r.Err)
			},
		},
		{
			name:    "nil value gives the zero value",
			handler: func(context.Context, *groupconc.Rejection) (any, error) { return nil, nil },
			check: func(t *testing.T, r groupconc.GroupResult[int], awaitErr error) {
				assert.NoError(t, awaitErr)
				assert.Equal(t, groupconc.StatusSuccess, r.Status, "err %v", r.Err)
				assert.Equal(t, 0, r.Value)
			},
		},
		{
			name:    "value of the wrong type",
			handler: func(context.Context, *groupconc.Rejection) (any, error) { return "forty-two", nil },
			check: func(t *testing.T, r groupconc.GroupResult[int], awaitErr error) {
				assert.NoError(t, awaitErr)
				assert.Equal(t, groupconc.StatusFailed, r.Status)
				require.Error(t, r.Err)
				assert.Contains(t, r.Err.Error(), "string", "the error should name the type returned")
				assert.Contains(t, r.Err.Error(), "int", "the error should name the task's type")
				assert.Equal(t, 0, r.Value)
			},
		},
		{
			name: "error matching ErrRejected",
			handler: func(context.Context, *groupconc.Rejection) (any, error) {
				return nil, errors.Join(errors.New("over quota"), groupconc.ErrRejected)
			},
			check: func(t *testing.T, r groupconc.GroupResult[int], _ error) {
				// Await's error is not checked: it is not promised
				// for a handler's rejection, only the status is.
				assert.Equal(t, groupconc.StatusRejected, r.Status, "err %v", r.Err)
				var re *groupconc.RejectedError
				require.ErrorAs(t, r.Err, &re, "REJECTED results carry a *RejectedError")
				assert.ErrorIs(t, r.Err, groupconc.ErrRejected)
			},
		},
		{
			name:    "other error",
			handler: func(context.Context, *groupconc.Rejection) (any, error) { return 5, errBoom },
			check: func(t *testing.T, r groupconc.GroupResult[int], awaitErr error) {
				assert.NoError(t, awaitErr)
				assert.Equal(t, groupconc.StatusFailed, r.Status)
				assert.ErrorIs(t, r.Err, errBoom)
				assert.Equal(t, 0, r.Value)
			},
		},
		{
			name:    "panic",
			handler: func(context.Context, *groupconc.Rejection) (any, error) { panic("handler boom") },
			check: func(t *testing.T, r groupconc.GroupResult[int], awaitErr error) {
				assert.NoError(t, awaitErr)
				assert.Equal(t, groupconc.StatusFailed, r.Status)
				var pe *groupconc.PanicError
				require.ErrorAs(t, r.Err, &pe)
				assert.Equal(t, "handler boom", pe.Value)
			},
		},
		{
			name:    "Run",
			handler: func(ctx context.Context, rej *groupconc.Rejection) (any, error) { return rej.Run(ctx) },
			runs:    true,
			check: func(t *testing.T, r groupconc.GroupResult[int], awaitErr error) {
				assert.NoError(t, awaitErr)
				assert.Equal(t, groupconc.StatusSuccess, r.Status, "err %v", r.Err)
				assert.Equal(t, 7, r.Value, "the task's own value should flow back through Run")
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r, ran, events, err := rejectedByHandler(t, groupconc.RejectAbort, c.handler)
				c.check(t, r, err)
				assert.Equal(t, c.runs, ran, "task function ran")
				want := []string{evSubmitted, evRejected}
				if c.runs {
					want = append(want, evStarted, evCompleted)
				}
				assert.Equal(t, want, events, "listener events")
			})
		})
	}
}

// rejectOne runs, in a bubble, a task of group a rejected under policy
// while a's only permit is held, and returns its handle (already complete
// unless the policy runs it), its task, and the listener's events for it.
func rejectOne(t *testing.T, policy groupconc.RejectionPolicy) (*groupconc.TaskHandle[int], *gatedTask, *recorder, func()) {
	t.Helper()
	rec := newRecorder()
	e, busy, hBusy := busyGroupA(t, groupconc.NewPolicyBuilder().
		RejectionPolicy(policy).
		TaskLifecycleListener(rec))
	k := newGatedTask(t, 7)
	h := submit(t, t.Context(), e, "a", "rejected", k.Fn)
	synctest.Wait()
	return h, k, rec, func() {
		busy.Release()
		k.Release()
		quiesce(t, e, hBusy, h)
	}
}

func TestRejectAbortCompletesRejectedAndAwaitReturnsTheRejectedError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, k, rec, done := rejectOne(t, groupconc.RejectAbort)
		re := requireRejected(t, h, "group")
		r, err := h.Await(t.Context())
		assert.Equal(t, groupconc.StatusRejected, r.Status)
		require.ErrorIs(t, err, groupconc.ErrRejected)
		var awaitRE *groupconc.RejectedError
		require.ErrorAs(t, err, &awaitRE)
		assert.Equal(t, re.Reason, awaitRE.Reason)
		assert.False(t, k.started.Load(), "a rejected task must not run")
		done()
		assert.Equal(t, []string{evSubmitted, evRejected}, rec.Events("a", "rejected"))
	})
}

func TestRejectDiscardCompletesRejectedAndAwaitReturnsNoError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, k, rec, done := rejectOne(t, groupconc.RejectDiscard)
		requireRejected(t, h, "group")
		r, err := h.Await(t.Context())
		assert.NoError(t, err)
		assert.Equal(t, groupconc.StatusRejected, r.Status)
		assert.ErrorIs(t, r.Err, groupconc.ErrRejected)
		assert.False(t, k.started.Load(), "a discarded task must not run")
		done()
		assert.Equal(t, []string{evSubmitted, evRejected}, rec.Events("a", "rejected"))
	})
}

func TestRejectCallerRunsRunsTheRejectedTaskAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, k, rec, done := rejectOne(t, groupconc.RejectCallerRuns)
		require.True(t, k.started.Load(), "the rejected task should run at once, while the group is busy")
		k.Release()
		r, err := h.Await(t.Context())
		require.NoError(t, err)
		assert.Equal(t, groupconc.StatusSuccess, r.Status, "err %v", r.Err)
		assert.Equal(t, 7, r.Value)
		done()
		assert.Equal(t, []string{evSubmitted, evRejected, evStarted, evCompleted}, rec.Events("a", "rejected"))
	})
}

func TestRejectedErrorReasonNamesTheThresholdThatRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		e := newExecutor(t, groupconc.NewPolicyBuilder().
			GlobalMaxInFlight(2).
			GlobalQueueThreshold(0).
			DefaultMaxConcurrencyPerGroup(1).
			DefaultQueueThresholdPerGroup(0).
			TaskLifecycleListener(rec))
		a1, x1 := newGatedTask(t, 1), newGatedTask(t, 2)
		hA1 := submit(t, t.Context(), e, "a", "a1", a1.Fn)
		synctest.Wait()
		// The global layer has room for a2, a's concurrency layer has not.
		groupRE := requireRejected(t, submit(t, t.Context(), e, "a", "a2", a1.Fn), "group")
		hX1 := submit(t, t.Context(), e, "x", "x1", x1.Fn)
		synctest.Wait()
		require.True(t, x1.started.Load())
		// Now the global layer is full.
		globalRE := requireRejected(t, submit(t, t.Context(), e, "y", "y1", x1.Fn), "global")

		assert.NotEqual(t, groupRE.Reason, globalRE.Reason)
		assert.Equal(t, groupRE.Reason, rec.Reason("a", "a2"), "OnRejected reason")
		assert.Equal(t, globalRE.Reason, rec.Reason("y", "y1"), "OnRejected reason")
		a1.Release()
		x1.Release()
		quiesce(t, e, hA1, hX1)
	})
}
