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

// Under IsolationOff a task waits for the global cap first, and holds no
// slot of its group's queue meanwhile. A raised cap hands it a permit and
// it walks on. If its group's queue is full by then, it is turned away
// there (a resumed task that held a slot would keep it). Then the policy
// decides, on a goroutine of the executor: here a handler's value, or the
// task itself run by the caller-runs policy.
func TestATaskARaisedGlobalCapLetsOnTurnedAwayByItsGroupsQueueEndsAsThePolicySays(t *testing.T) {
	for _, c := range []struct {
		name string
		b    func() *groupconc.PolicyBuilder
		want int // the task's value: 1 when it runs, else the handler's
	}{
		{"a handler", func() *groupconc.PolicyBuilder { return builder().RejectionHandler(handlerOf(5)) }, 5},
		{"caller runs", func() *groupconc.PolicyBuilder { return builder().RejectionPolicy(groupconc.RejectCallerRuns) }, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				capped := func(n int) *groupconc.PolicyBuilder {
					return c.b().GlobalMaxInFlight(n).DefaultQueueThresholdPerGroup(0)
				}
				e := newExecutor(t, capped(1))
				holder, first := newGatedTask(t, 0), newGatedTask(t, 0)
				held := submit(t, t.Context(), e, "h", "held", holder.Fn)
				synctest.Wait()
				hf := submit(t, t.Context(), e, "a", "first", first.Fn) // takes a's one permit once let on
				x := submit(t, t.Context(), e, "a", "x", succeed)
				synctest.Wait()
				require.False(t, x.IsDone(), "x waits for the global cap")
				upUpdate(t, e, capped(3))
				r := x.Wait()
				assert.Equal(t, groupconc.StatusSuccess, r.Status, "err %v", r.Err)
				assert.Equal(t, c.want, r.Value)
				require.False(t, hf.IsDone(), "first runs")
				holder.Release()
				first.Release()
				quiesce(t, e, held, hf, x)
			})
		})
	}
}

// Such a task gives back the global permit it was handed as it is turned
// away. The task that permit goes to starts before the handler returns:
// the handler runs with no permit held, and none is kept from others.
func TestAPermitATaskTurnedAwayGaveBackGoesOnBeforeItsHandlerReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nextStarted := make(chan struct{})
		capped := func(n int) *groupconc.PolicyBuilder {
			return builder().GlobalMaxInFlight(n).DefaultQueueThresholdPerGroup(0).
				RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) {
					<-nextStarted
					return 5, nil
				})
		}
		e := newExecutor(t, capped(1))
		holder, first := newGatedTask(t, 0), newGatedTask(t, 0)
		held := submit(t, t.Context(), e, "h", "held", holder.Fn)
		synctest.Wait()
		hf := submit(t, t.Context(), e, "a", "first", first.Fn)
		x := submit(t, t.Context(), e, "a", "x", succeed)
		next := submit(t, t.Context(), e, "b", "next", func(context.Context) (int, error) {
			close(nextStarted)
			return 2, nil
		})
		synctest.Wait()
		upUpdate(t, e, capped(3)) // first and x walk on; x gives its permit to next
		assert.Equal(t, 5, x.Wait().Value)
		assert.Equal(t, 2, next.Wait().Value)
		holder.Release()
		first.Release()
		quiesce(t, e, held, hf, x, next)
	})
}
