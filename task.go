package groupconc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/kobe/groupconc/internal/groupstate"
)

// ErrInvalidTask is wrapped by the error Submit and ExecuteAll return for an
// empty group key, an empty task ID or a nil task function.
var ErrInvalidTask = errors.New("groupconc: invalid task")

// Task is the work a task does. Its context derives from the context given
// to Submit. It is cancelled when the task is cancelled by any route, and
// context.Cause tells which (ErrClosed after Close, for example). A task
// that returns an error matching context.Canceled or
// context.DeadlineExceeded while its context is done ends CANCELLED.
//
// The context ends when the task returns. Work the task starts and leaves
// running (a goroutine, another Submit) is cancelled then if it uses that
// context. Give such work context.WithoutCancel(ctx), which keeps the values
// and drops the cancellation.
type Task[T any] func(ctx context.Context) (T, error)

// GroupTask is one entry of an ExecuteAll batch.
type GroupTask[T any] struct {
	GroupKey string
	TaskID   string
	Task     Task[T]
}

// checkTask returns an error wrapping ErrInvalidTask that names the first
// bad field. The where argument prefixes it (for example "tasks[3].").
func checkTask(where, groupKey, taskID string, fnMissing bool) error {
	switch {
	case groupKey == "":
		return fmt.Errorf("%w: %sGroupKey is empty", ErrInvalidTask, where)
	case taskID == "":
		return fmt.Errorf("%w: %sTaskID is empty", ErrInvalidTask, where)
	case fnMissing:
		return fmt.Errorf("%w: %sTask is nil", ErrInvalidTask, where)
	}
	return nil
}

// task is the untyped state of one submitted task. It holds its data and its
// atomic state, and nothing that drives it. The scheduler does that (see
// scheduler.go). It lives inside its TaskHandle, and is its context too (see
// taskContext). So a submission allocates one struct for handle, context and
// bookkeeping. What few tasks need is allocated on the side, in a taskAside.
// That is a built context, a done channel, a rejection reason, or a watch on
// the caller's context. TestTaskHandleStaysWithinItsSizeClass guards the
// size. Every waiting task is one, so it keeps nothing found elsewhere, such
// as its executor (see exec). The result, which it does not need while it
// waits, takes little room. Err is kept aside, and status and End are
// packed in state. The ready queue links a task through its Permits.
type task struct {
	permits groupstate.Permits[task] // also the task's group key, Submitted time and executor
	body    body
	id      string
	caller  context.Context // the context given to Submit

	start int64 // the result's Start, written by the claimer before completedBit: an offset from submitted (see since)

	// The state bits below, and once completedBit is set, the rest of the
	// result. That is its status, and End (an offset from submitted).
	state atomic.Uint64

	aside atomic.Pointer[taskAside] // made on first need, then never changed
}

// Bits of task.state. Each is set once and never cleared.
const (
	claimedBit   uint64 = 1 << iota // set by whoever completes the handle
	completedBit                    // set by the claimer once the result is written
	cancelledBit                    // the context's own cancel has a cause
	asideCause                      // with cancelledBit: the cause is aside.cause, not context.Canceled
	overBit                         // the task is over: its context was closed
	cancelResult                    // with completedBit: Cancel wrote the result; Err is the cause, Start is End unless cancelRan
	abortBit                        // with completedBit: Await returns Err too (RejectAbort)
	endAside                        // with completedBit: End did not fit in state, it is aside.end
	startedBit                      // the function is about to run: start is its Start (see began)
	cancelRan                       // with cancelResult: Cancel found startedBit, so Start is start
)

// Where the result's status and End are in task.state, set with
// completedBit. The status is in 3 bits, and End in the bits above when it
// is in [0, maxStateEnd], 26 days. Otherwise aside.end keeps it.
const (
	statusShift        = 10
	endShift           = 13
	maxStateEnd uint64 = 1<<(64-endShift) - 1
)

// taskAside is the part of a task that few tasks need.
type taskAside struct {
	// reason is set once the task is rejected, by the goroutine owning the
	// task, and read only by the task's owners.
	reason string

	// woken is closed when a slot is handed to the task's blocked caller
	// (see waitSlot). The caller sets it before it joins the line.
	woken chan struct{}

	cause atomic.Pointer[error] // the own cancel's cause, when not context.Canceled
	end   int64                 // the result's End, when endAside says so; written as err is
	// err is the result's Err, when not nil. The claimer writes it once,
	// before completedBit is set, unless the claimer is Cancel (see
	// cancelResult). A task that succeeds never makes its aside for it.
	err error

	mu sync.Mutex
	// The done channel is made only for a caller that waits before the
	// task completed, so the many tasks found finished by ExecuteAll or a
	// later Wait never allocate one.
	done    chan struct{} // guarded by mu; closed once completed
	unwatch func() bool   // guarded by mu: detaches watch's function from caller

	built  atomic.Bool             // ctx, cancel and stop are set and never change again
	ctx    context.Context         // guarded by mu until built: the inner context
	cancel context.CancelCauseFunc // guarded by mu until built
	stop   func() bool             // guarded by mu until built; detaches from caller
}

// outcome is a result as the claimer writes it into a task.
type outcome struct {
	status     TaskStatus // 0: the body did not return (runtime.Goexit)
	err        error
	start, end int64 // offsets from Submitted (see task.since)
	abort      bool  // Await returns err too (RejectAbort)
	told       bool  // the listener hears OnCompleted: the task ran, or was cancelled waiting
}

// ReadyNext returns the task after t in the ready queue. A task there
// holds every permit and waits in no line, so the queue links it through
// its Permits (see groupstate.Permits.Next).
func (t *task) ReadyNext() *task { return t.permits.Next() }

// SetReadyNext links next after t in the ready queue; nil unlinks t.
func (t *task) SetReadyNext(next *task) { t.permits.SetNext(next) }

// exec returns t's executor, the owner of its group's registry. A task keeps
// no pointer of its own.
func (t *task) exec() *GroupExecutor { return t.permits.Owner().(*GroupExecutor) }

// key returns t's group key.
func (t *task) key() string { return t.permits.Key() }

// getAside returns t's aside part, making it on first use.
func (t *task) getAside() *taskAside {
	if a := t.aside.Load(); a != nil {
		return a
	}
	a := new(taskAside)
	if t.aside.CompareAndSwap(nil, a) {
		return a
	}
	return t.aside.Load()
}

// setReason records why t was rejected. Only the goroutine owning t calls
// it, and reason.
func (t *task) setReason(reason string) { t.getAside().reason = reason }

// reason returns why t was rejected, or "" if it was not.
func (t *task) reason() string {
	if a := t.aside.Load(); a != nil {
		return a.reason
	}
	return ""
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
// start. So Cancel, which completes the handle at once, keeps that Start.
// The start field is written before the bit that Cancel reads.
func (t *task) began(start int64) {
	t.start = start
	t.state.Or(startedBit)
}

// claimed reports whether the handle was claimed by anyone.
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

// publishCancelled completes the handle CANCELLED at now, for Cancel. Cancel
// claimed it after cancelling the context with the cause that the result's
// Err is (see taskContext.cause). The ran argument says the function had begun,
// so Start is its start, not now. It writes nothing but state, because t may
// be in the ready queue.
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
		return StatusCancelled, start, end, t.context().cause()
	}
	return TaskStatus(s >> statusShift & 7), t.start, end, t.resultErr()
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

// closedChan is the done channel of a task completed before anyone asked.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// doneChan returns the channel closed when t completes.
func (t *task) doneChan() <-chan struct{} {
	if t.isDone() {
		return closedChan
	}
	a := t.getAside()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.done == nil {
		if t.isDone() { // published before a was there, or before the lock
			return closedChan
		}
		a.done = make(chan struct{})
	}
	return a.done
}

// wait blocks until t completes.
func (t *task) wait() {
	if !t.isDone() {
		<-t.doneChan()
	}
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
