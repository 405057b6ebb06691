package groupconc

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/kobe/groupconc/internal/groupstate"
)

// ErrClosed is returned by Submit and ExecuteAll once Shutdown or Close has
// been called. It is also the context.Cause of every task cancelled by Close
// or by a Shutdown whose context ended.
var ErrClosed = errors.New("groupconc: executor closed")

var (
	errNilExecutor  = errors.New("groupconc: nil *GroupExecutor")
	errNilContext   = fmt.Errorf("%w: nil context", ErrInvalidTask)
	errGroupStopped = errors.New("groupconc: group shut down")
	errGroupEvicted = errors.New("groupconc: group evicted")
)

// GroupExecutor runs tasks with per-group limits. Each accepted task runs on
// a goroutine of its own, owned by the executor, which takes the task's
// permits in a fixed order (global in-flight, then the group's bulkhead, then
// the group's concurrency), runs the function and releases the permits in
// reverse order before completing the task's handle.
//
// Groups are created on first use, with limits resolved once from the
// policy; they are remembered, with those limits, until EvictGroup. Tasks
// waiting for a permit are served first come, first served: the tasks of a
// group get its permits in the order they were submitted (for Submit calls
// made concurrently, in the order Submit took their places), and a newly
// submitted task never passes a waiting one.
//
// A GroupExecutor is safe for concurrent use. Create it with New; the zero
// value is not usable. Call Shutdown or Close when done with it: until then
// its group contexts stay registered with each other (no goroutine is kept).
type GroupExecutor struct {
	policy    *GroupPolicy
	listener  TaskLifecycleListener
	global    *groupstate.Global
	groups    *groupstate.Registry
	root      context.Context         // parent of every group scope
	closeRoot context.CancelCauseFunc // cancels every task, with ErrClosed
	gate      gate

	submitted, succeeded, failed, cancelled, rejected atomic.Uint64
}

// New returns an executor governed by policy; nil means DefaultPolicy().
func New(policy *GroupPolicy) *GroupExecutor {
	policy = policy.orDefault()
	root, closeRoot := context.WithCancelCause(context.Background())
	return &GroupExecutor{
		policy:    policy,
		listener:  policy.listener,
		global:    groupstate.NewGlobal(policy.globalInFlight, policy.globalQueue),
		groups:    groupstate.NewRegistry(root, policy.limits),
		root:      root,
		closeRoot: closeRoot,
		gate:      gate{drained: make(chan struct{})},
	}
}

// Submit hands task to e under groupKey and returns its handle at once: it
// never waits for a permit. The task's context derives from ctx: values flow
// to it, and ending ctx cancels the task. A task whose ctx is already done
// completes CANCELLED without running.
//
// Submit returns an error wrapping ErrInvalidTask for an empty groupKey or
// taskID or a nil task, and ErrClosed once Shutdown or Close has begun. A
// task turned away by a queue threshold is not an error here: its handle
// reports the outcome the rejection policy gives it.
func Submit[T any](ctx context.Context, e *GroupExecutor, groupKey, taskID string, task Task[T]) (*TaskHandle[T], error) {
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	if err := checkTask("", groupKey, taskID, task == nil); err != nil {
		return nil, err
	}
	h := &TaskHandle[T]{fn: task}
	if err := e.submit(ctx, &h.t, h, groupKey, taskID); err != nil {
		return nil, err
	}
	return h, nil
}

// ExecuteAll submits every task, waits for all of them and returns their
// results in input order. It does not stop at the first failure: every task
// runs, and a task rejected under RejectAbort appears as a REJECTED result.
//
// Every task is validated first; if one is invalid nothing is submitted and
// the error (wrapping ErrInvalidTask) names its index. If ctx ends before
// every task has finished, the unfinished ones are cancelled and reported
// CANCELLED, the finished ones keep their result, and ExecuteAll returns
// all len(tasks) results with ctx.Err(). If the executor closes part way,
// the tasks it did not accept are reported CANCELLED with Err ErrClosed and
// ExecuteAll returns ErrClosed.
func ExecuteAll[T any](ctx context.Context, e *GroupExecutor, tasks []GroupTask[T]) ([]GroupResult[T], error) {
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	for i, gt := range tasks {
		if err := checkTask(fmt.Sprintf("tasks[%d].", i), gt.GroupKey, gt.TaskID, gt.Task == nil); err != nil {
			return nil, err
		}
	}
	handles := make([]TaskHandle[T], len(tasks))
	results := make([]GroupResult[T], len(tasks))
	var err error
	for i, gt := range tasks {
		h := &handles[i]
		h.fn = gt.Task
		if err = e.submit(ctx, &h.t, h, gt.GroupKey, gt.TaskID); err != nil {
			now := time.Now()
			for j := i; j < len(tasks); j++ {
				results[j] = GroupResult[T]{
					GroupKey: tasks[j].GroupKey, TaskID: tasks[j].TaskID,
					Status: StatusCancelled, Err: err,
					Submitted: now, Start: now, End: now,
				}
			}
			handles = handles[:i]
			break
		}
	}
	for i := range handles {
		h := &handles[i]
		if !h.t.completed.Load() {
			select {
			case <-h.t.doneChan():
			case <-ctx.Done():
				h.t.cancelNow(cancelErr(ctx))
				h.t.wait() // cancelNow lost only to a completion about to publish
			}
		}
		results[i] = h.result()
	}
	if err == nil {
		err = ctx.Err()
	}
	return results, err
}

// check reports misuse that Submit and ExecuteAll turn into errors.
func (e *GroupExecutor) check(ctx context.Context) error {
	switch {
	case e == nil:
		return errNilExecutor
	case ctx == nil:
		return errNilContext
	}
	return nil
}

// submit accepts t into its group and starts it. It does not block: the
// layers are tried at once, on the caller's goroutine, so a task that can
// start, and a task that must be rejected, is known before Submit returns.
func (e *GroupExecutor) submit(ctx context.Context, t *task, b body, key, id string) error {
	// After this, Shutdown waits for t; enter fails once Shutdown or Close
	// has begun, so no task is accepted after the drain started.
	if !e.gate.enter() {
		return ErrClosed
	}
	g := e.groups.Get(key)
	t.init(ctx, e, g, key, id, b)
	spawned := false
	defer func() {
		if !spawned {
			e.settle(t)
		}
	}()
	e.submitted.Add(1)
	notifySubmitted(e.listener, key, id)
	if t.ctx.Err() != nil {
		e.endWaiting(t)
		return nil
	}
	switch out, reason := t.permits.Try(); out {
	case groupstate.MustWait:
		t.mustWait = true
	case groupstate.Rejected:
		t.reason = reason
		notifyRejected(e.listener, key, id, reason)
		if e.policy.rejectionHandler == nil && e.policy.rejection != RejectCallerRuns {
			e.reject(t) // no goroutine needed
			return nil
		}
	}
	spawned = true
	go e.execute(t)
	return nil
}

// execute is the body of a task's goroutine: wait for the permits if needed,
// then run the function or handle the rejection.
func (e *GroupExecutor) execute(t *task) {
	defer e.settle(t)
	start := t.submitted // a task admitted inside Submit held its permits then
	if t.mustWait {
		out, reason := t.permits.Wait(groupstate.Stop{
			Caller:    t.ctx.caller.Done(),
			Scope:     t.ctx.scope.Done(),
			Cancelled: &t.claimed, // only Cancel completes a waiting task
		})
		switch out {
		case groupstate.Cancelled:
			e.endWaiting(t)
			return
		case groupstate.Rejected:
			t.reason = reason
			notifyRejected(e.listener, t.key, t.id, reason)
		default:
			start = time.Now()
		}
	}
	if t.reason != "" {
		e.rejectAsync(t)
		return
	}
	// A context that ended while the last permit was granted still wins:
	// the function never starts on a cancelled context.
	if e.cancelledBeforeRun(t) {
		e.endWaiting(t)
		return
	}
	notifyStarted(e.listener, t.key, t.id)
	t.body.run(&t.ctx, start)
}

// settle ends a task's life in the executor, deferred on the goroutine that
// owns the task at the time (Submit's caller, or the task's own). On every
// path the task has completed by then; but a listener method that calls
// runtime.Goexit (t.FailNow in a test's listener, say) unwinds the goroutine
// from the middle, and settle still releases the permits, completes the
// handle FAILED and lets Shutdown stop waiting, so the task is never
// stranded.
func (e *GroupExecutor) settle(t *task) {
	t.permits.Release()
	if !t.claimed.Load() {
		t.finish(StatusFailed, panicError(nil), nil)
	}
	t.ctx.release()
	e.gate.leave()
}

// cancelledBeforeRun reports whether t has been cancelled. ShutdownGroup,
// EvictGroup and Close cancel a scope whose error is set at once but whose
// child contexts are cancelled one by one, and the caller's cancel reaches
// the task's context through context.AfterFunc, on another goroutine: a task
// whose own context has not been reached yet may meanwhile get a permit
// freed by a sibling that did react. So the caller's context, the scope and
// the executor are asked too, and the task's context
// is waited for (its cancel is on the way) so that its error is set when the
// result is written.
func (e *GroupExecutor) cancelledBeforeRun(t *task) bool {
	c := &t.ctx
	if c.Err() == nil && e.root.Err() == nil && (!c.built.Load() || c.caller.Err() == nil && c.scope.Err() == nil) {
		return false
	}
	<-t.ctx.Done()
	return true
}

// endWaiting completes a task cancelled before it ran; the listener hears
// OnCompleted, as for any task cancelled while waiting.
func (e *GroupExecutor) endWaiting(t *task) {
	t.permits.Release()
	t.finish(StatusCancelled, cancelErr(&t.ctx), nil)
	t.body.completed()
}

// rejectAsync handles a rejection on the task's goroutine.
func (e *GroupExecutor) rejectAsync(t *task) {
	ctx := &t.ctx
	switch {
	case e.policy.rejectionHandler != nil:
		t.body.handleRejection(ctx, e.policy.rejectionHandler)
	case e.policy.rejection == RejectCallerRuns:
		if ctx.Err() != nil {
			t.finish(StatusCancelled, cancelErr(ctx), nil)
			return
		}
		notifyStarted(e.listener, t.key, t.id)
		t.body.run(ctx, time.Now())
	default:
		e.reject(t)
	}
}

// reject completes t REJECTED; under RejectAbort Await also returns the error.
func (e *GroupExecutor) reject(t *task) {
	err := &RejectedError{GroupKey: t.key, TaskID: t.id, Reason: t.reason}
	var awaitErr error
	if e.policy.rejection == RejectAbort {
		awaitErr = err
	}
	t.finish(StatusRejected, err, awaitErr)
}

// count records a task's final status in the outcome counters.
func (e *GroupExecutor) count(s TaskStatus) {
	switch s {
	case StatusSuccess:
		e.succeeded.Add(1)
	case StatusFailed:
		e.failed.Add(1)
	case StatusCancelled:
		e.cancelled.Add(1)
	case StatusRejected:
		e.rejected.Add(1)
	}
}

// ShutdownGroup cancels every task of groupKey, with cause "group shut down":
// waiting tasks end CANCELLED at once, running ones see their context
// cancelled. Other groups are untouched. The group keeps its limits, and
// tasks submitted to it afterwards are accepted as usual. It does nothing
// for an unknown group and does not wait.
func (e *GroupExecutor) ShutdownGroup(groupKey string) {
	if g, ok := e.groups.Lookup(groupKey); ok {
		g.Shutdown(errGroupStopped)
	}
}

// EvictGroup cancels every task of groupKey, as ShutdownGroup does, and
// forgets the group: its limits are resolved again for the next task, and
// it is gone from Stats. Tasks still running on the evicted group's permits
// release them into its old semaphores, never into the new group's; until
// they return, the old and new group together may run more than the limit.
func (e *GroupExecutor) EvictGroup(groupKey string) {
	e.groups.Evict(groupKey, errGroupEvicted)
}

// Shutdown stops accepting tasks (Submit returns ErrClosed) and waits until
// every accepted task, waiting or running, has finished; then it returns nil.
// If ctx ends first, Shutdown cancels the remaining tasks, with cause
// ErrClosed, and returns ctx.Err() without waiting for them to return. It may
// be called more than once, and concurrently with Close.
func (e *GroupExecutor) Shutdown(ctx context.Context) error {
	e.gate.close()
	if ctx == nil {
		ctx = context.Background()
	}
	// A drained executor returns nil even when ctx is already done.
	select {
	case <-e.gate.drained:
	default:
		select {
		case <-e.gate.drained:
		case <-ctx.Done():
			e.closeRoot(ErrClosed)
			return ctx.Err()
		}
	}
	e.closeRoot(ErrClosed)
	return nil
}

// Close stops accepting tasks and cancels every task, with cause ErrClosed,
// and returns at once: waiting tasks end CANCELLED; running functions see
// their context cancelled, and their goroutines end when they return. Close
// is idempotent and always returns nil. Use Shutdown to wait for tasks.
func (e *GroupExecutor) Close() error {
	e.gate.close()
	e.closeRoot(ErrClosed)
	return nil
}

// gate counts the accepted tasks that have not finished, and refuses new
// ones once closed. A single atomic word holds both, so accepting a task
// takes no lock: either enter sees the closed bit and fails, or close sees
// the task counted and the drain waits for it.
type gate struct {
	n       atomic.Int64  // accepted, unfinished tasks; closedBit once closed
	drained chan struct{} // closed when the gate is closed and n is zero
}

const closedBit = 1 << 62

func (g *gate) enter() bool {
	for {
		n := g.n.Load()
		if n&closedBit != 0 {
			return false
		}
		if g.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (g *gate) leave() {
	// The count never rises once closed, so exactly one leave sees the
	// last task go.
	if g.n.Add(-1) == closedBit {
		close(g.drained)
	}
}

func (g *gate) close() {
	if old := g.n.Or(closedBit); old == 0 {
		close(g.drained)
	}
}
