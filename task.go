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
// empty group key, an empty task ID or a nil task function, for options out
// of range, and for a key with more ancestors than a group may have.
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

	// The bits of complete.go, and once completedBit is set, the rest of the
	// result. That is its status, and End (an offset from submitted).
	state atomic.Uint64

	aside atomic.Pointer[taskAside] // made on first need, then never changed
}

// taskAside is the part of a task that few tasks need.
type taskAside struct {
	// reason is set once the task is rejected, by the goroutine owning the
	// task, and read only by the task's owners. So is policy, the policy in
	// force then, which decides what becomes of the task (see turnAway).
	reason string
	policy *GroupPolicy

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
	timed  bool                    // guarded by mu until built: ctx expires at the caller's deadline itself
}

// ReadyNext returns the task after t in the ready queue. A task there
// holds every permit and waits in no line, so the queue links it through
// its Permits (see groupstate.Permits.Next).
func (t *task) ReadyNext() *task { return t.permits.Next() }

// SetReadyNext links next after t in the ready queue. A nil next unlinks t.
func (t *task) SetReadyNext(next *task) { t.permits.SetNext(next) }

// inline reports whether t is a Do's, which its caller runs.
func (t *task) inline() bool { return t.state.Load()&inlineBit != 0 }

// inlineCaller is the body of a Do's task (doCall).
type inlineCaller interface {
	wake(handed bool, start int64)
	ended()
	taskID(e *GroupExecutor) string
	borrows() bool
}

// taskID returns t's ID. A Do's task has none until asked (doCall.taskID).
func (t *task) taskID() string {
	if t.id == "" {
		return t.body.taskID(t.exec())
	}
	return t.id
}

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

// turnedAway records why t was turned away, and p, the policy in force
// then (nil: the one in force when it is read). Only the goroutine owning
// t calls it, and rejectedUnder.
func (t *task) turnedAway(reason string, p *GroupPolicy) {
	a := t.getAside()
	a.reason, a.policy = reason, p
}

// rejectedUnder returns the policy in force when t was turned away, or
// else the one in force now.
func (t *task) rejectedUnder(e *GroupExecutor) *GroupPolicy {
	if a := t.aside.Load(); a != nil && a.policy != nil {
		return a.policy
	}
	return e.policy.Load()
}

// reason returns why t was rejected, or "" if it was not.
func (t *task) reason() string {
	if a := t.aside.Load(); a != nil {
		return a.reason
	}
	return ""
}

// topKey returns the key of t's group's top-level ancestor, or t's key.
func topKey(t *task) string {
	g := t.permits.Group()
	for p := g.Parent(); p != nil; p = p.Parent() {
		g = p
	}
	return g.Key()
}
