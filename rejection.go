package groupconc

import (
	"context"
	"errors"
	"fmt"
)

// RejectionPolicy decides what happens to a task that a queue threshold turns
// away, when no RejectionHandler is set.
type RejectionPolicy int

const (
	// RejectAbort completes the task REJECTED, and its Await returns the
	// *RejectedError. It is the default.
	RejectAbort RejectionPolicy = iota
	// RejectDiscard completes the task REJECTED, and its Await returns no
	// error.
	RejectDiscard
	// RejectCallerRuns runs the task at once on its own goroutine, holding
	// no permit. It counts in no limit and in no Running or InFlight stat. A
	// task whose context is already done is CANCELLED instead.
	RejectCallerRuns
	// RejectDiscardOldest makes room. A task that finds its queue full takes
	// the slot of the oldest waiting task of the lowest priority at or below
	// its own. That task ends REJECTED with ReasonDisplaced, and its Await
	// returns no error. If every waiting task has a higher priority, the new
	// task is rejected as under RejectDiscard. So it is while a caller of
	// SubmitWith with Block waits for a slot of that queue. The slot would
	// go to the new task, past the caller waiting for the next one. So the
	// new task is turned away instead, with the queue's reason, and no
	// waiting task is displaced. A blocked caller's task that waits past
	// MaxWait displaces nobody either. It blocked instead of making room,
	// so it is turned away with ReasonWaitTimeout, as under RejectDiscard.
	RejectDiscardOldest RejectionPolicy = 3
)

// String returns "RejectAbort", "RejectDiscard", "RejectCallerRuns" or
// "RejectDiscardOldest".
func (p RejectionPolicy) String() string {
	switch p {
	case RejectAbort:
		return "RejectAbort"
	case RejectDiscard:
		return "RejectDiscard"
	case RejectCallerRuns:
		return "RejectCallerRuns"
	case RejectDiscardOldest:
		return "RejectDiscardOldest"
	}
	return fmt.Sprintf("RejectionPolicy(%d)", int(p))
}

// ErrRejected matches, through errors.Is, every *RejectedError. A
// RejectionHandler returns an error matching it to reject a task.
var ErrRejected = errors.New("groupconc: task rejected")

// The RejectedError.Reason, and the OnRejected reason, of a task turned away
// by a queue threshold, the global one or its group's.
const (
	ReasonGlobalQueueFull = "global_queue_full"
	ReasonGroupQueueFull  = "group_queue_full"
)

// ReasonWaitTimeout is the reason of a task whose SubmitWith Block wait ran
// past its MaxWait.
const ReasonWaitTimeout = "wait_timeout"

// ReasonDisplaced is the reason of a waiting task that made room for a new
// one under RejectDiscardOldest.
const ReasonDisplaced = "displaced"

// RejectedError is the Err of every REJECTED result. Reason says why the
// task was turned away. It is ReasonGlobalQueueFull or ReasonGroupQueueFull
// for a queue threshold, or what a RejectionHandler's own *RejectedError
// says.
type RejectedError struct {
	GroupKey, TaskID, Reason string
}

// Error names the task and its group, quoted and cut like every caller's
// string in an error.
func (e *RejectedError) Error() string {
	return "groupconc: task " + quoted(e.TaskID) + " of group " + quoted(e.GroupKey) + " rejected: " + word(e.Reason)
}

// Is reports whether target is ErrRejected.
func (e *RejectedError) Is(target error) bool { return target == ErrRejected }

// Rejection describes a rejected task to a RejectionHandler, and lets the
// handler run it.
type Rejection struct {
	GroupKey, TaskID, Reason string
	run                      func(ctx context.Context) (any, error)
}

var errNoTask = errors.New("groupconc: Rejection.Run: no task to run")

// Run runs the rejected task now, on the calling goroutine, holding no
// permit, and returns what its function returned. The listener sees the task
// start and, after the handler returns, complete. Only the first call runs
// the task. Later calls return an error. So does a call after the handler
// returned. By then the task has completed, so a kept Rejection runs
// nothing. A panic in the function propagates to the handler's caller, which
// turns it into a FAILED result.
func (r *Rejection) Run(ctx context.Context) (any, error) {
	if r == nil || r.run == nil {
		return nil, errNoTask
	}
	return r.run(ctx)
}

// RejectionHandler decides the outcome of a rejected task. When set, it
// replaces the RejectionPolicy. It runs on the task's goroutine with no
// permit held, and its return becomes the result.
//   - (v, nil) gives SUCCESS with v. A nil v gives the zero value, and a v
//     that is not of the task's type gives FAILED with an error saying so.
//   - An error matching ErrRejected gives REJECTED, its Err a *RejectedError
//     (the handler's own, if it returned one). Await returns no error, since
//     the handler, not RejectAbort, decided.
//   - Another error gives FAILED with it, or CANCELLED if it is the
//     context's error and the context is done.
//
// A handler that panics gives FAILED with a *PanicError. The ctx is the
// task's context.
type RejectionHandler func(ctx context.Context, r *Rejection) (any, error)

// turnAway records that a queue threshold turned t away, for the reason
// given, and tells the listener. It reports whether t is still to run, on a
// goroutine of the executor. There its rejection handler or the caller-runs
// policy decides its outcome. Otherwise it finishes t REJECTED here.
func (e *GroupExecutor) turnAway(t *task, reason string) (run bool) {
	// The policy in force now decides, even if UpdatePolicy returns before
	// the task's goroutine gets to run its handler or the task.
	p := e.policy.Load()
	t.turnedAway(reason, p)
	t.tellRejected(p.listener, reason)
	if p.rejectionHandler != nil || p.rejection == RejectCallerRuns && !t.permits.Group().Paused() {
		return true
	}
	e.reject(t, p.rejection == RejectCallerRuns) // a paused group's: as under RejectAbort
	return false
}

// runRejected decides what becomes of a task a queue threshold turned away.
// The policy in force then decides (see turnAway), not the one in force
// now: its handler, or the caller-runs policy, or else it ends REJECTED.
func (e *GroupExecutor) runRejected(t *task) {
	if testHookRunRejected != nil {
		testHookRunRejected(t.key())
	}
	ctx := t.context()
	switch p := t.rejectedUnder(e); {
	case p.rejectionHandler != nil:
		var o outcome
		defer e.finish(t, &o)
		t.body.callHandler(t, ctx, p.rejectionHandler, p.listener, &o)
	case p.rejection == RejectCallerRuns && t.permits.Group().Paused():
		e.reject(t, true) // a paused group runs nothing, not even this way
	case p.rejection == RejectCallerRuns:
		if ctx.Err() != nil {
			now := t.since()
			e.finish(t, &outcome{status: StatusCancelled, err: cancelErr(ctx), start: now, end: now})
			return
		}
		e.run(nil, t, t.since())
	default:
		e.reject(t, false)
	}
}

// testHookRunRejected, if set, runs as runRejected begins, with the key
// of the task's group. A test pauses the group there, after turnAway let
// the task go on.
var testHookRunRejected func(groupKey string)

// reject finishes t REJECTED. Under RejectAbort, or if abort, Await also
// returns the error.
func (e *GroupExecutor) reject(t *task, abort bool) {
	now := t.since()
	e.finish(t, &outcome{
		status: StatusRejected,
		err:    &RejectedError{GroupKey: t.key(), TaskID: t.taskID(), Reason: t.reason()},
		start:  now, end: now,
		abort: abort || t.rejectedUnder(e).rejection == RejectAbort,
	})
}
