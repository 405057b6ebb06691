package groupconc

import (
	"context"
	"fmt"
)

// A task's ending. Every task ends once, through end, on its owner's
// goroutine (see scheduler.go). Its handle completes once, by whoever claims
// it first: the owner, as the function or rejection handler returns
// (body.call, callHandler) or else in finish, or cancel (Cancel, from any
// goroutine). So a Cancel after the function returned loses. A Do whose
// function ran is never published (see finish). The handle's state is one
// word, task.state, whose bits are these.
//
//	bit           set by                     written before         read by
//	------------  -------------------------  ---------------------  ------------------------------
//	claimedBit    claim: the owner, cancel   —                      claim (who completes), stopRequested
//	completedBit  complete (the claimer)     status, End, aside.err isDone, doneChan (handle.go), finalResult
//	cancelledBit  the task's context         aside.cause            taskContext (see taskctx.go)
//	asideCause    the task's context         aside.cause            taskContext
//	overBit       end (context closed)       —                      taskContext
//	cancelResult  publishCancelled           —                      finalResult (Err is the cause)
//	abortBit      publish (RejectAbort)      aside.err              awaitErr
//	endAside      complete                   aside.end              finalResult
//	startedBit    began (run), take          task.start             cancel (Start of a cancelled run)
//	cancelRan     publishCancelled           —                      finalResult (Start is start)
//	inlineBit     do, before it is submitted —                      launch, work, handOn, end
//	readyBit      launch (admitted task)     —                      take, cancel: whoever clears it owns t

// Bits of task.state, in the table's order. Each is set once, and only
// readyBit is cleared.
const (
	claimedBit uint64 = 1 << iota
	completedBit
	cancelledBit
	asideCause // with cancelledBit: the cause is aside.cause, not context.Canceled
	overBit
	cancelResult // with completedBit: Err is the cause, Start is End unless cancelRan
	abortBit
	endAside // with completedBit: End did not fit in state
	startedBit
	cancelRan
	inlineBit
	readyBit
)

// Where the result's status and End are in task.state, above the bits.
// They are set with completedBit, in the same atomic Or. The status is in
// 3 bits, and End in the bits above when it is in [0, maxStateEnd], 6
// days. Otherwise aside.end keeps it.
const (
	statusShift        = 12
	endShift           = 15
	maxStateEnd uint64 = 1<<(64-endShift) - 1
)

// outcome is a result as the claimer writes it into a task.
type outcome struct {
	status     TaskStatus // 0: the body did not return (runtime.Goexit)
	err        error
	start, end int64   // offsets from Submitted (see task.since)
	abort      bool    // Await returns err too (RejectAbort)
	told       bool    // the listener hears OnCompleted: the task ran, or was cancelled waiting
	claimed    bool    // the owner claimed the handle as the function returned (see body.call)
	r          *runner // the record that shows the task running, if any
}

// claim reports whether the caller is the one to complete the handle.
func (t *task) claim() bool {
	claimed, _ := t.claimRan()
	return claimed
}

// claimRan claims as claim does, and reports too whether t's function had
// begun (began) by then, in the same atomic step.
func (t *task) claimRan() (claimed, ran bool) {
	old := t.state.Or(claimedBit)
	return old&claimedBit == 0, old&startedBit != 0
}

// began records that t's function is about to run, holding its permits since
// start, for Cancel's result: start is written before the bit Cancel reads.
// A worker that took t from the ready queue set both (leaveReady, start 0),
// so start is not written again while a Cancel may read it.
func (t *task) began(start int64) {
	if t.start != start {
		t.start = start
	}
	t.state.Or(startedBit)
}

// claimed reports whether anyone claimed the handle.
func (t *task) claimed() bool { return t.state.Load()&claimedBit != 0 }

// isDone reports whether the result is written.
func (t *task) isDone() bool { return t.state.Load()&completedBit != 0 }

// publish writes the result and completes the handle. Only the claimer may
// call it, once. Cancel calls publishCancelled instead.
func (t *task) publish(o *outcome) {
	bits := completedBit | uint64(o.status)<<statusShift
	if o.abort {
		bits |= abortBit
	}
	if o.err != nil {
		t.getAside().err = o.err
	}
	t.start = o.start
	t.complete(bits, o.end)
}

// publishCancelled completes the handle CANCELLED at now, for Cancel. Its
// Err is the cause Cancel recorded (cancelCause). If ran, the function had
// begun, so Start is its start, not now. It writes nothing but state,
// because t may be in the ready queue.
func (t *task) publishCancelled(now int64, ran bool) {
	bits := completedBit | cancelResult | uint64(StatusCancelled)<<statusShift
	if ran {
		bits |= cancelRan
	}
	t.complete(bits, now)
}

// complete sets bits and End in state, and closes the done channel.
func (t *task) complete(bits uint64, end int64) {
	if uint64(end) <= maxStateEnd {
		bits |= uint64(end) << endShift
	} else {
		t.getAside().end = end
		bits |= endAside
	}
	t.state.Or(bits)
	// A waiter that makes its channel after this load sees completedBit
	// (see doneChan).
	if a := t.aside.Load(); a != nil {
		a.mu.Lock()
		if a.done != nil {
			close(a.done)
		}
		a.mu.Unlock()
	}
}

// finalResult is the result as the claimer wrote it, but for the value. Call
// it only once t completed.
func (t *task) finalResult() (status TaskStatus, start, end int64, err error) {
	s := t.state.Load()
	end = int64(s >> endShift)
	if s&endAside != 0 {
		end = t.aside.Load().end
	}
	if s&cancelResult != 0 {
		start = end
		if s&cancelRan != 0 {
			start = t.start // written before startedBit, which Cancel saw
		}
		return StatusCancelled, start, end, t.cancelCause()
	}
	return TaskStatus(s >> statusShift & 7), t.start, end, t.resultErr()
}

// cancelCause is the cause Cancel's claimer recorded (cancelWith), or
// context.Canceled. It is not read from the context, which the task's
// owner may have closed between Cancel's claim and its cause (see cancel).
func (t *task) cancelCause() error {
	if a := t.aside.Load(); a != nil {
		if p := a.cause.Load(); p != nil {
			return *p
		}
	}
	return context.Canceled
}

// resultErr is the result's Err as the claimer wrote it.
func (t *task) resultErr() error {
	if a := t.aside.Load(); a != nil {
		return a.err
	}
	return nil
}

// awaitErr is what Await returns besides the result. Call it only once t
// completed.
func (t *task) awaitErr() error {
	if t.state.Load()&abortBit != 0 {
		return t.resultErr()
	}
	return nil
}

// cancelErr is the Err of a task cancelled before it ran. It is the
// context's error, which also matches the cause when there is a more
// specific one (ErrClosed, say).
func cancelErr(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}

// finishCancelled finishes t CANCELLED before it ran. The listener hears
// OnCompleted, as for any task cancelled while waiting.
func (e *GroupExecutor) finishCancelled(t *task) {
	now := t.since()
	e.finish(t, &outcome{status: StatusCancelled, err: cancelErr(t.context()), start: now, end: now, told: true})
}

// finish gives t its outcome. It gives back t's permits, deciding who they
// go to, tells the listener and completes the handle, in that order. So a
// caller that waits for one task and then submits the next finds its
// permits free and its OnCompleted returned. end carries on whom they went to.
func (e *GroupExecutor) finish(t *task, o *outcome) {
	if o.status == 0 { // the body did not return: runtime.Goexit, or a Do's panic
		o.status, o.err, o.end = StatusFailed, t.body.unwound(), t.since()
	}
	if o.r != nil {
		// It runs no more: OldestRunning leaves it as Running does, before
		// the listener hears of it and the handle completes.
		o.r.running(nil, 0)
	}
	t.permits.Release()
	l := e.listener()
	if !o.told {
		l = nil
	}
	// A Do's task that ran (see run) is not published: no handle shows it.
	published := o.end != endUnread
	if !published && l != nil {
		o.end = t.since() // read by the listener alone
	}
	if !o.claimed && !t.claim() {
		// Cancel completed the handle at once, and the listener hears its
		// result.
		if l != nil {
			t.body.tellCompleted(t, outcome{}, l)
		}
		return
	}
	e.count(t, o.status)
	// Deferred, so that the handle completes even if the listener calls
	// runtime.Goexit.
	if published {
		defer t.publish(o)
	}
	if l != nil {
		t.body.tellCompleted(t, *o, l)
	}
}

// end takes t out of the executor, once, on its owner's goroutine. It gives
// back t's permits if finish did not. It counts t out of its group, which
// may then be forgotten as idle. It completes the handle FAILED if
// runtime.Goexit unwound the goroutine before anything completed it. It
// closes t's context and leaves Shutdown's count. Then it carries on, as
// how says, with the tasks t's permits went to at the clock reading ended
// (or noTime), and returns the one to run next on this goroutine, if any.
func (e *GroupExecutor) end(t *task, how handOff, ended int64) (next *task, start int64) {
	t.permits.Release()
	t.permits.Exit()
	if t.claim() {
		now := t.since()
		e.completeClaimed(t, &outcome{status: StatusFailed, err: panicError(nil), start: now, end: now})
	}
	t.context().close()
	e.gate.leave(t)
	if t.inline() {
		t.body.ended()
	}
	return e.handOn(&t.permits, how, ended)
}

// completeClaimed counts t's outcome and completes its handle. The caller
// has claimed it.
func (e *GroupExecutor) completeClaimed(t *task, o *outcome) {
	e.count(t, o.status)
	t.publish(o)
}

// count records t's final status in the outcome counters, the
// executor's and its group's.
func (e *GroupExecutor) count(t *task, s TaskStatus) {
	if s < StatusSuccess || s > StatusRejected {
		return
	}
	e.gate.count(t, outcomeIndex(s))
	t.permits.Group().CountOutcome(outcomeIndex(s))
}

// outcomeIndex is the index of status s among a group's outcome counters.
func outcomeIndex(s TaskStatus) int { return int(s - StatusSuccess) }

// cancel is Cancel. It completes t's handle CANCELLED with cause, and
// cancels its context with cause, unless the handle already completed. It
// does not own t. A t that it takes out of its line, or out of the ready
// queue, gives its permits back here and goes to a goroutine of its own
// to end.
func (e *GroupExecutor) cancel(t *task, cause error) bool {
	claimed, ran := t.claimRan()
	if !claimed {
		return false
	}
	t.context().cancelWith(cause)
	// Interleaving: after the claim, a task in no line at this moment sees
	// it once it joins one (see stopRequested). One at rest in the ready
	// queue is taken from there, unless a worker took it first.
	left := t.permits.Leave() || t.leaveReady(true)
	if left {
		// This goroutine owns t now, and its function never runs. Its
		// permits go back before its handle completes, as any task's do,
		// so a caller that cancels it and then submits finds them free.
		// endCancelled carries on those they go to.
		t.permits.Release()
	}
	// The result's Err is cause, which cancelWith recorded. The owner, whose
	// finish lost the claim, may have closed the context already, which
	// then says context.Canceled (see cancelCause).
	e.count(t, StatusCancelled)
	t.publishCancelled(e.clock()-t.permits.Submitted(), ran)
	if left {
		e.goEndCancelled(t)
	}
	return true
}
