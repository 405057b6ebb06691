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
