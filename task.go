package groupconc

import (
	"context"
	"errors"
	"fmt"
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
	// the function panics or calls runtime.Goexit.
	run(ctx context.Context)
	// handleRejection runs the executor's RejectionHandler and completes
	// the task with what it returns.
	handleRejection(ctx context.Context, h RejectionHandler)
	// completed tells the listener the task's final result.
	completed()
}

// task is the untyped state of one submitted task. It lives inside its
// TaskHandle, so a submission allocates one struct for handle, context and
// bookkeeping.
type task struct {
	ctx       taskContext
	cancel    context.CancelCauseFunc
	stop      func() bool // detaches from the caller's context; nil if it never ends
	exec      *GroupExecutor
	body      body
	permits   groupstate.Permits
	key, id   string
	submitted time.Time
	mustWait  bool   // Try left the task holding a queue slot
	reason    string // set once the task is rejected

	claimed atomic.Bool   // set by whoever completes the handle
	done    chan struct{} // closed once the result below is written

	// The result, written once by the claimer before done is closed.
	status     TaskStatus
	err        error
	awaitErr   error // what Await returns besides the result
	start, end time.Time
}

// taskContext is the context a task's function sees. Cancellation comes from
// the task's own cancel context, which derives from its group's scope (and so
// from the executor); values and deadline come from the caller's context,
// whose cancellation is forwarded by context.AfterFunc.
type taskContext struct {
	context.Context // the task's cancel context
	caller          context.Context
}

// Value looks in the cancel context first so context.Cause finds the task's
// own cause; no other key is stored there, so values come from the caller.
func (c *taskContext) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.caller.Value(key)
}

func (c *taskContext) Deadline() (time.Time, bool) { return c.caller.Deadline() }

// init prepares t as a new task of group g.
func (t *task) init(ctx context.Context, e *GroupExecutor, g *groupstate.Group, key, id string, b body) {
	t.exec, t.body, t.key, t.id = e, b, key, id
	t.submitted = time.Now()
	t.done = make(chan struct{})
	t.permits.Init(e.global, g)
	cctx, cancel := context.WithCancelCause(g.Scope())
	t.ctx = taskContext{Context: cctx, caller: ctx}
	t.cancel = cancel
	if ctx.Done() != nil {
		if ctx.Err() != nil {
			cancel(context.Cause(ctx))
		} else {
			t.stop = context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
		}
	}
}

// claim reports whether the caller is the one to complete the handle.
func (t *task) claim() bool { return t.claimed.CompareAndSwap(false, true) }

// publish writes the result and completes the handle. Only the claimer may
// call it, once. Permits must be released before: a caller that waits for
// this task and then submits the next must find them free.
func (t *task) publish(status TaskStatus, err, awaitErr error, start, end time.Time) {
	t.status, t.err, t.awaitErr, t.start, t.end = status, err, awaitErr, start, end
	t.exec.count(status)
	close(t.done)
}

// finish completes a task that does not run, unless its handle was already
// completed (by Cancel).
func (t *task) finish(status TaskStatus, err, awaitErr error) {
	if t.claim() {
		now := time.Now()
		t.publish(status, err, awaitErr, now, now)
	}
}

// detach cancels the task's context and unhooks it from the caller's, so
// neither the group scope nor a long-lived caller context keeps it.
func (t *task) detach() {
	if t.stop != nil {
		t.stop()
	}
	t.cancel(context.Canceled)
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
