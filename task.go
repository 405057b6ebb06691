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
// TaskHandle, and its context is a field of it too, so a submission
// allocates one struct for handle, context and bookkeeping.
type task struct {
	ctx       taskContext
	exec      *GroupExecutor
	body      body
	permits   groupstate.Permits
	key, id   string
	submitted time.Time
	reason    string // set once the task is rejected

	claimed atomic.Bool // set by whoever completes the handle
	// completed is set once the result below is written. The done channel
	// is made only for a caller that waits before that, so the many tasks
	// found finished by ExecuteAll or a later Wait never allocate one.
	completed atomic.Bool
	doneMu    sync.Mutex
	done      chan struct{} // guarded by doneMu; closed once completed

	// The result, written once by the claimer before completed is set.
	status     TaskStatus
	err        error
	awaitErr   error // what Await returns besides the result
	start, end int64 // offsets from submitted, in nanoseconds (see since)
}

// taskContext is the context a task's function sees. Values and deadline
// come from the caller's context; cancellation from the caller's context,
// the task's group scope (ShutdownGroup, EvictGroup, and through it Close)
// and the task's own cancel (Cancel).
//
// Most functions never look at their context's Done channel, so the real
// cancel context behind it is built lazily, by the first Done or Value call
// (or by a wait for a permit, which needs Done). Until then Err is computed
// from the three sources, and a cancel only records its cause. The real
// context derives from the group scope, so Close and ShutdownGroup reach it
// through the standard context tree, and context.Cause sees their cause.
type taskContext struct {
	caller context.Context
	scope  context.Context

	built     atomic.Bool // inner, cancel and stop are set and never change again
	cancelled atomic.Bool // cause is set
	mu        sync.Mutex
	inner     context.Context         // guarded by mu until built
	cancel    context.CancelCauseFunc // guarded by mu until built
	stop      func() bool             // guarded by mu until built; detaches from caller
	cause     error                   // guarded by mu: the own cancel's cause, once cancelled
	unwatch   func() bool             // guarded by mu: detaches watch's function from caller
	over      bool                    // guarded by mu: released
}

func (c *taskContext) Deadline() (time.Time, bool) { return c.caller.Deadline() }

func (c *taskContext) String() string { return "groupconc.taskContext" }

func (c *taskContext) Done() <-chan struct{} { return c.build().Done() }

// Err reports the caller's error first, so a caller's deadline shows as
// context.DeadlineExceeded rather than as the Canceled of the forwarding.
func (c *taskContext) Err() error {
	if c.built.Load() {
		if c.inner.Err() == nil {
			return nil
		}
		if err := c.caller.Err(); err != nil {
			return err
		}
		return c.inner.Err()
	}
	if err := c.caller.Err(); err != nil {
		return err
	}
	if c.cancelled.Load() {
		return c.build().Err()
	}
	return c.scope.Err()
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
	if c.built.Load() {
		return c.inner
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.built.Load() {
		inner, cancel := context.WithCancelCause(c.scope)
		switch caller := c.caller; {
		case c.cause != nil:
			cancel(c.cause)
		case caller.Done() == nil:
		case caller.Err() != nil:
			cancel(context.Cause(caller))
		default:
			c.stop = context.AfterFunc(caller, func() { cancel(context.Cause(caller)) })
		}
		c.inner, c.cancel = inner, cancel
		c.built.Store(true)
	}
	return c.inner
}

// cancelWith cancels the context with cause; the first cause sticks.
func (c *taskContext) cancelWith(cause error) {
	c.mu.Lock()
	if c.cause == nil {
		c.cause = cause
		c.cancelled.Store(true)
	}
	built := c.built.Load()
	c.mu.Unlock()
	if built {
		c.cancel(cause)
	}
}

// watch arranges for f to run, on a goroutine of its own, when the caller's
// context ends, until the task is over. A caller's context that never ends
// costs nothing here.
func (c *taskContext) watch(f func()) {
	if c.caller.Done() == nil {
		return
	}
	c.mu.Lock()
	if !c.over {
		c.unwatch = context.AfterFunc(c.caller, f)
	}
	c.mu.Unlock()
}

// release cancels the context once the task is over, and unhooks it from
// the caller's context and the group scope so neither keeps it. A context
// never built, nor watched, costs nothing here.
func (c *taskContext) release() {
	c.cancelWith(context.Canceled)
	c.mu.Lock()
	c.over = true
	unwatch := c.unwatch
	c.mu.Unlock()
	if unwatch != nil {
		unwatch()
	}
	if c.built.Load() && c.stop != nil {
		c.stop()
	}
}

// init prepares t as a new task of group g.
func (t *task) init(ctx context.Context, e *GroupExecutor, g *groupstate.Group, key, id string, b body) {
	t.exec, t.body, t.key, t.id = e, b, key, id
	t.submitted = time.Now()
	t.permits.Init(e.global, g, t)
	t.ctx.caller, t.ctx.scope = ctx, t.permits.Scope()
}

// since returns the time elapsed since t was submitted, read on the
// monotonic clock alone, which is cheaper than time.Now: so a task reads the
// wall clock once, when submitted. submitted.Add of it (see at) is a time
// with the same monotonic reading as time.Now would have given.
func (t *task) since() int64 { return int64(time.Since(t.submitted)) }

// at returns the time that offset, from since, stands for.
func (t *task) at(offset int64) time.Time {
	if offset == 0 { // the Start of a task admitted inside Submit
		return t.submitted
	}
	return t.submitted.Add(time.Duration(offset))
}

// releasePermits gives back t's permits. When the executor has a listener,
// the tasks they were handed to get goroutines at once rather than wait for
// the listener calls that end t; otherwise the goroutine that settles t
// carries on with them (see GroupExecutor.handOn).
func (t *task) releasePermits() {
	t.permits.Release()
	if t.exec.listener != nil {
		t.exec.handOn(&t.permits, false)
	}
}

// claim reports whether the caller is the one to complete the handle.
func (t *task) claim() bool { return t.claimed.CompareAndSwap(false, true) }

// publish writes the result and completes the handle. Only the claimer may
// call it, once. Permits must be released before: a caller that waits for
// this task and then submits the next must find them free.
func (t *task) publish(status TaskStatus, err, awaitErr error, start, end int64) {
	t.status, t.err, t.awaitErr, t.start, t.end = status, err, awaitErr, start, end
	t.exec.count(status)
	t.doneMu.Lock()
	t.completed.Store(true)
	if t.done != nil {
		close(t.done)
	}
	t.doneMu.Unlock()
}

// closedChan is the done channel of a task completed before anyone asked.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// doneChan returns the channel closed when t completes.
func (t *task) doneChan() <-chan struct{} {
	if t.completed.Load() {
		return closedChan
	}
	t.doneMu.Lock()
	defer t.doneMu.Unlock()
	if t.done == nil {
		if t.completed.Load() {
			return closedChan
		}
		t.done = make(chan struct{})
	}
	return t.done
}

// wait blocks until t completes.
func (t *task) wait() {
	if !t.completed.Load() {
		<-t.doneChan()
	}
}

// cancelNow completes the handle CANCELLED with err, and cancels the task's
// context with cause err, unless the handle already completed.
func (t *task) cancelNow(err error) bool {
	if !t.claim() {
		return false
	}
	t.ctx.cancelWith(err)
	// After claimed is set: a task in no line at this moment sees it once
	// it joins one (see GroupExecutor.stopRequested).
	left := t.permits.Leave()
	now := t.since()
	t.publish(StatusCancelled, err, nil, now, now)
	if left {
		go t.exec.drop(t)
	}
	return true
}

// finish completes a task that does not run, unless its handle was already
// completed (by Cancel).
func (t *task) finish(status TaskStatus, err, awaitErr error) {
	if t.claim() {
		now := t.since()
		t.publish(status, err, awaitErr, now, now)
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
