package groupconc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kobe/groupconc/internal/groupstate"
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
func checkTask(where, groupKey, taskID string, nilTask bool) error {
	switch {
	case groupKey == "":
		return fmt.Errorf("%w: %sGroupKey is empty", ErrInvalidTask, where)
	case taskID == "":
		return fmt.Errorf("%w: %sTaskID is empty", ErrInvalidTask, where)
	case nilTask:
		return fmt.Errorf("%w: %sTask is nil", ErrInvalidTask, where)
	}
	return nil
}

// body is the typed side of a task, implemented by *TaskHandle[T]. The
// scheduling core is not generic: it drives a task through its layers and
// calls body only to run the function and to report typed results.
type body interface {
	// run calls the task's function on the calling goroutine, with
	// whatever permits the task holds, and completes the task: permits
	// released, handle completed, OnCompleted told. It does so even when
	// the function panics or calls runtime.Goexit. start is the result's
	// Start, as an offset from Submitted (see task.since): when the task
	// held its permits.
	run(ctx context.Context, start int64)
	// handleRejection runs the executor's RejectionHandler and completes
	// the task with what it returns.
	handleRejection(ctx context.Context, h RejectionHandler)
	// completed tells the listener the task's final result.
	completed()
}

// task is the untyped state of one submitted task. It lives inside its
// TaskHandle, and is its context too (see taskContext), so a submission
// allocates one struct for handle, context and bookkeeping. It is kept
// small, since every task allocates it: what few tasks need (a built
// context, a done channel, a rejection reason, a watch on the caller's
// context) is allocated on the side, in a taskAside.
type task struct {
	permits groupstate.Permits[task] // also the task's group key (see key)
	exec    *GroupExecutor
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

	nextLaunch *task // the next task in the ready queue; see readyQueue
}

// Bits of task.state. Each is set once and never cleared.
const (
	claimedBit   uint32 = 1 << iota // set by whoever completes the handle
	completedBit                    // set by the claimer once the result is written
	cancelledBit                    // the context's own cancel has a cause
	asideCause                      // with cancelledBit: the cause is aside.cause, not context.Canceled
	overBit                         // the task is over: its context was released
)

// taskAside is the part of a task that few tasks need.
type taskAside struct {
	// reason is set once the task is rejected, by the goroutine owning the
	// task, and read only by the task's owners.
	reason string

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

// taskContext is the context a task's function sees: the task itself, seen
// as a context. Values and deadline come from the caller's context;
// cancellation from the caller's context, the task's group scope
// (ShutdownGroup, EvictGroup, and through it Close) and the task's own
// cancel (Cancel).
//
// Most functions never look at their context's Done channel, so the real
// cancel context behind it, the inner context, is built lazily (in the
// task's aside), by the first Done or Value call. Until then Err is computed
// from the three sources, and a cancel only records its cause, in the
// task's state. The inner context derives from the group scope, so Close
// and ShutdownGroup reach it through the standard context tree, and
// context.Cause sees their cause.
type taskContext task

// context returns t as the context its function sees.
func (t *task) context() *taskContext { return (*taskContext)(t) }

func (c *taskContext) task() *task { return (*task)(c) }

func (c *taskContext) Deadline() (time.Time, bool) { return c.caller.Deadline() }

func (c *taskContext) String() string { return "groupconc.taskContext" }

func (c *taskContext) Done() <-chan struct{} { return c.build().Done() }

// Err reports the caller's error first, so a caller's deadline shows as
// context.DeadlineExceeded rather than as the Canceled of the forwarding.
func (c *taskContext) Err() error {
	if a := c.aside.Load(); a != nil && a.built.Load() {
		if a.ctx.Err() == nil {
			return nil
		}
		if err := c.caller.Err(); err != nil {
			return err
		}
		return a.ctx.Err()
	}
	if err := c.caller.Err(); err != nil {
		return err
	}
	if c.state.Load()&cancelledBit != 0 {
		return c.build().Err()
	}
	return c.permits.Scope().Err()
}

// Value looks in the inner context first, so context.Cause (which asks for
// the nearest cancel context by a private key) finds the task's own cause;
// no other key is stored there, so values come from the caller.
func (c *taskContext) Value(key any) any {
	if v := c.build().Value(key); v != nil {
		return v
	}
	return c.caller.Value(key)
}

// build returns the inner cancel context, creating it on first use already
// cancelled if any source has been.
func (c *taskContext) build() context.Context {
	a := c.task().getAside()
	if a.built.Load() {
		return a.ctx
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.built.Load() {
		inner, cancel := context.WithCancelCause(c.permits.Scope())
		switch caller := c.caller; {
		case c.state.Load()&cancelledBit != 0:
			cancel(c.cause())
		case caller.Done() == nil:
		case caller.Err() != nil:
			cancel(context.Cause(caller))
		default:
			a.stop = context.AfterFunc(caller, func() { cancel(context.Cause(caller)) })
		}
		a.ctx, a.cancel = inner, cancel
		a.built.Store(true)
	}
	return a.ctx
}

// cause returns the own cancel's cause; call it only once cancelledBit is
// set.
func (c *taskContext) cause() error {
	if c.state.Load()&asideCause != 0 {
		return *c.aside.Load().cause.Load()
	}
	return context.Canceled
}

// cancelWith cancels the context with cause; the first cause sticks. A
// context never built only records the cause: context.Canceled costs one
// bit of the state; another cause is kept aside.
func (c *taskContext) cancelWith(cause error) {
	bits := cancelledBit
	if cause != context.Canceled {
		p := new(error)
		*p = cause
		c.task().getAside().cause.CompareAndSwap(nil, p)
		bits |= asideCause
	}
	for {
		s := c.state.Load()
		if s&cancelledBit != 0 || c.state.CompareAndSwap(s, s|bits) {
			break
		}
	}
	c.cancelBuilt()
}

// cancelBuilt cancels the inner context with the recorded cause, if it is
// built. Called after the cause is recorded: a build that comes later sees
// the cause, and one under way holds mu until its context is set.
func (c *taskContext) cancelBuilt() {
	a := c.aside.Load()
	if a == nil {
		return
	}
	a.mu.Lock()
	built := a.built.Load()
	a.mu.Unlock()
	if built {
		a.cancel(c.cause())
	}
}

// watch arranges for the task's callerEnded to run, on a goroutine of its
// own, when the caller's context ends, until the task is over. A caller's
// context that never ends costs nothing here.
func (c *taskContext) watch() {
	if c.caller.Done() == nil {
		return
	}
	a := c.task().getAside()
	a.mu.Lock()
	// release sets overBit before it looks for the aside: either it finds
	// the aside, and takes mu after this, or overBit is seen here.
	if c.state.Load()&overBit == 0 {
		a.unwatch = context.AfterFunc(c.caller, c.task().callerEnded)
	}
	a.mu.Unlock()
}

// release cancels the context once the task is over, and unhooks it from
// the caller's context and the group scope so neither keeps it. A context
// never built, nor watched, costs one atomic operation here.
func (c *taskContext) release() {
	c.state.Or(cancelledBit | overBit) // the cause is context.Canceled unless one was set
	a := c.aside.Load()
	if a == nil {
		return
	}
	a.mu.Lock()
	built, unwatch := a.built.Load(), a.unwatch
	a.mu.Unlock()
	if unwatch != nil {
		unwatch()
	}
	if built {
		a.cancel(c.cause())
		if a.stop != nil {
			a.stop()
		}
	}
}

// init prepares t as a new task of group g.
func (t *task) init(ctx context.Context, e *GroupExecutor, g *groupstate.Group[task], id string, b body) {
	t.exec, t.body, t.id = e, b, id
	t.permits.Init(g, t, e.clock())
	t.caller = ctx
}

// built reports whether the inner context exists.
func (c *taskContext) built() bool {
	a := c.aside.Load()
	return a != nil && a.built.Load()
}

// key returns t's group key.
func (t *task) key() string { return t.permits.Key() }

// since returns the time elapsed since t was submitted, read on the
// monotonic clock alone (see GroupExecutor.clock).
func (t *task) since() int64 { return t.exec.clock() - t.permits.Submitted() }

// at returns the time that offset, from since, stands for: 0 is the time t
// was submitted.
func (t *task) at(offset int64) time.Time {
	return t.exec.epoch.Add(time.Duration(t.permits.Submitted() + offset))
}

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

// releasePermits gives back t's permits. When the executor has a listener,
// the tasks they were handed to get goroutines at once rather than wait for
// the listener calls that end t; otherwise the goroutine that settles t
// carries on with them (see GroupExecutor.handOn).
func (t *task) releasePermits() {
	t.permits.Release()
	if t.exec.listener() != nil {
		t.exec.handOn(&t.permits, false)
	}
}

// claim reports whether the caller is the one to complete the handle.
func (t *task) claim() bool { return t.state.Or(claimedBit)&claimedBit == 0 }

// claimed reports whether the handle was claimed by anyone.
func (t *task) claimed() bool { return t.state.Load()&claimedBit != 0 }

// isDone reports whether the result is written.
func (t *task) isDone() bool { return t.state.Load()&completedBit != 0 }

// publish writes the result and completes the handle. Only the claimer may
// call it, once. Permits must be released before: a caller that waits for
// this task and then submits the next must find them free. abort means
// that Await returns err too.
func (t *task) publish(status TaskStatus, err error, abort bool, start, end int64) {
	t.status, t.err, t.abort, t.start, t.end = uint8(status), err, abort, start, end
	t.exec.count(status)
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

// cancelNow completes the handle CANCELLED with err, and cancels the task's
// context with cause err, unless the handle already completed.
func (t *task) cancelNow(err error) bool {
	if !t.claim() {
		return false
	}
	t.context().cancelWith(err)
	// After the claim: a task in no line at this moment sees it once it
	// joins one (see GroupExecutor.stopRequested).
	left := t.permits.Leave()
	now := t.since()
	t.publish(StatusCancelled, err, false, now, now)
	if left {
		go t.drop()
	}
	return true
}

// finish completes a task that does not run, unless its handle was already
// completed (by Cancel).
func (t *task) finish(status TaskStatus, err error, abort bool) {
	if t.claim() {
		now := t.since()
		t.publish(status, err, abort, now, now)
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
