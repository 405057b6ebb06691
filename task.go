package groupconc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/kobe/groupconc/internal/groupstate"
	"github.com/kobe/groupconc/internal/readyq"
)

// ErrInvalidTask is wrapped by the error Submit and ExecuteAll return for an
// empty group key, an empty task ID or a nil task function.
var ErrInvalidTask = errors.New("groupconc: invalid task")

// Task is the work a task does. Its context is cancelled when the task is
// cancelled by any route; context.Cause tells which (ErrClosed after Close,
// for example). A task that returns an error matching context.Canceled or
// context.DeadlineExceeded while its context is done ends CANCELLED.
type Task[T any] func(ctx context.Context) (T, error)

// GroupTask is one entry of an ExecuteAll batch.
type GroupTask[T any] struct {
	GroupKey string
	TaskID   string
	Task     Task[T]
}

// checkTask returns an error wrapping ErrInvalidTask that names the first bad
// field; where prefixes the field (for example "tasks[3].").
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

// task is the untyped state of one submitted task: its data and its atomic
// state, and nothing that drives it (the scheduler does; see scheduler.go).
// It lives inside its TaskHandle, and is its context too (see taskContext),
// so a submission allocates one struct for handle, context and bookkeeping.
// What few tasks need (a built context, a done channel, a rejection reason,
// a watch on the caller's context) is allocated on the side, in a taskAside
// (TestTaskHandleStaysWithinItsSizeClass guards the size).
type task struct {
	permits groupstate.Permits[task] // also the task's group key and Submitted time
	exec    *GroupExecutor           // for the layers above: scheduler, handle
	body    body
	id      string
	caller  context.Context // the context given to Submit

	// The result, written once by the claimer before completedBit is set.
	err        error
	start, end int64 // offsets from submitted, in nanoseconds (see since)
	state      atomic.Uint32
	status     uint8 // a TaskStatus
	abort      bool  // Await returns err too (RejectAbort)

	aside atomic.Pointer[taskAside] // made on first need, then never changed

	ready readyq.Link[task] // its place in the ready queue
}

// Bits of task.state. Each is set once and never cleared.
const (
	claimedBit   uint32 = 1 << iota // set by whoever completes the handle
	completedBit                    // set by the claimer once the result is written
	cancelledBit                    // the context's own cancel has a cause
	asideCause                      // with cancelledBit: the cause is aside.cause, not context.Canceled
	overBit                         // the task is over: its context was closed
)

// taskAside is the part of a task that few tasks need.
type taskAside struct {
	// reason is set once the task is rejected, by the goroutine owning the
	// task, and read only by the task's owners.
	reason string

	// woken is closed when a slot is handed to the task's blocked caller
	// (see waitSlot); set by the caller before it joins the line.
	woken chan struct{}
	// displaced is the waiting task whose slot the task's walk took under
	// RejectDiscardOldest, for its owner to end (see displaced).
	displaced *task

	cause atomic.Pointer[error] // the own cancel's cause, when not context.Canceled

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

// ReadyLink returns t's place in the ready queue.
func (t *task) ReadyLink() *readyq.Link[task] { return &t.ready }

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

// reason returns why t was rejected; "" if it was not.
func (t *task) reason() string {
	if a := t.aside.Load(); a != nil {
		return a.reason
	}
	return ""
}

// claim reports whether the caller is the one to complete the handle.
func (t *task) claim() bool { return t.state.Or(claimedBit)&claimedBit == 0 }

// claimed reports whether the handle was claimed by anyone.
func (t *task) claimed() bool { return t.state.Load()&claimedBit != 0 }

// isDone reports whether the result is written.
func (t *task) isDone() bool { return t.state.Load()&completedBit != 0 }

// publish writes the result and completes the handle. Only the claimer may
// call it, once.
func (t *task) publish(o *outcome) {
	t.status, t.err, t.abort, t.start, t.end = uint8(o.status), o.err, o.abort, o.start, o.end
	t.state.Or(completedBit)
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

// awaitErr is what Await returns besides the result; call it only once t
// completed.
func (t *task) awaitErr() error {
	if t.abort {
		return t.err
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

// cancelErr is the Err of a task cancelled before it ran: the context's error,
// also matching the cause when there is a more specific one (ErrClosed, say).
func cancelErr(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}
