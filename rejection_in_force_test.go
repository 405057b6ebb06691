package groupconc_test

// The rejection policy in force when a task is turned away decides what
// becomes of it, even if UpdatePolicy returns before its goroutine runs.

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// handlerOf returns a rejection handler whose tasks succeed with v.
func handlerOf(v int) groupconc.RejectionHandler {
	return func(context.Context, *groupconc.Rejection) (any, error) { return v, nil }
}

func TestATaskTurnedAwayBeforeUpdatePolicyEndsAsThePolicyThenSaid(t *testing.T) {
	noSlots := func() *groupconc.PolicyBuilder { return builder().DefaultQueueThresholdPerGroup(0) }
	for _, c := range []struct {
		name     string
		from, to *groupconc.PolicyBuilder
		want     int // the task's value: 1 when it runs, else the handler's
	}{
		{"caller runs, then abort", noSlots().RejectionPolicy(groupconc.RejectCallerRuns), noSlots(), 1},
		{"caller runs, then discard", noSlots().RejectionPolicy(groupconc.RejectCallerRuns),
			noSlots().RejectionPolicy(groupconc.RejectDiscard), 1},
		{"caller runs, then a handler", noSlots().RejectionPolicy(groupconc.RejectCallerRuns),
			noSlots().RejectionHandler(handlerOf(9)), 1},
		{"a handler, then abort", noSlots().RejectionHandler(handlerOf(5)), noSlots(), 5},
		{"a handler, then caller runs", noSlots().RejectionHandler(handlerOf(5)),
			noSlots().RejectionPolicy(groupconc.RejectCallerRuns), 5},
		{"a handler, then another", noSlots().RejectionHandler(handlerOf(5)), noSlots().RejectionHandler(handlerOf(9)), 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, c.from)
				k := newGatedTask(t, 0)
				run := submit(t, t.Context(), e, "a", "run", k.Fn)
				synctest.Wait()
				// Turned away inside Submit; UpdatePolicy returns before
				// its goroutine need have run.
				h := submit(t, t.Context(), e, "a", "x", succeed)
				upUpdate(t, e, c.to)
				r, err := h.Await(t.Context())
				require.NoError(t, err)
				assert.Equal(t, groupconc.StatusSuccess, r.Status, "err %v", r.Err)
				assert.Equal(t, c.want, r.Value)
				k.Release()
				quiesce(t, e, run, h)
			})
		})
	}
}

func TestATaskTurnedAwayBeforeUpdatePolicyIsToldToThePolicysListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before, after := newRecorder(), newRecorder()
		b := func(l groupconc.TaskLifecycleListener) *groupconc.PolicyBuilder {
			return builder().DefaultQueueThresholdPerGroup(0).RejectionPolicy(groupconc.RejectDiscard).TaskLifecycleListener(l)
		}
		e := newExecutor(t, b(before))
		k := newGatedTask(t, 0)
		run := submit(t, t.Context(), e, "a", "run", k.Fn)
		synctest.Wait()
		h := submit(t, t.Context(), e, "a", "x", succeed)
		upUpdate(t, e, b(after))
		assert.Equal(t, groupconc.StatusRejected, h.Wait().Status)
		assert.Equal(t, 1, before.Count(evRejected), "the listener in force when x was turned away")
		assert.Zero(t, after.Count(evRejected))
		k.Release()
		quiesce(t, e, run, h)
	})
}
