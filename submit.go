package groupconc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"
)

// Priority orders a task among the tasks waiting in the same line. A task
// never waits behind a task of lower priority, and tasks of one priority are
// served in arrival order. One exception keeps a costly task from starving.
// Under IsolationFairShare, at the global cap and at a parent's limit, a task
// of Cost above one that the fair choice fell on stays chosen until it
// starts. Every task waiting there waits behind it, whatever its priority.
// The zero Priority means PriorityNormal.
type Priority int

const (
	PriorityHighest Priority = iota + 1 // served first
	PriorityHigh
	PriorityNormal // the default; the zero Priority means PriorityNormal
	PriorityLow
	PriorityLowest
)

// String returns "highest", "high", "normal", "low" or "lowest".
func (p Priority) String() string {
	switch p {
	case PriorityHighest:
		return "highest"
	case PriorityHigh:
		return "high"
	case PriorityNormal, 0:
		return "normal"
	case PriorityLow:
		return "low"
	case PriorityLowest:
		return "lowest"
	}
	return fmt.Sprintf("Priority(%d)", int(p))
}

// SubmitOptions refines one submission. The zero value submits as Submit
// does.
type SubmitOptions struct {
	// Block waits for a queue slot instead of being turned away for lack
	// of one.
	Block bool
	// MaxWait bounds a Block wait for a queue slot. Zero waits until ctx
	// ends. Without Block it does nothing. A wait for permits in a line is
	// bounded by ctx, which bounds the task's whole life, or by Cancel.
	MaxWait time.Duration
	// Priority orders the task among the tasks waiting where it waits.
	Priority Priority
	// Cost is the permits the task takes at each limit it passes: the
	// global cap, its group's bulkhead and concurrency limit, and each
	// ancestor's. Zero means one. A cost above a limit takes the whole of
	// that limit, so the task runs alone there. A limit raised while it
	// holds it tops it up to the new limit, or to its cost if less, so it
	// still runs alone below its cost. A lowered limit takes nothing back.
	// Under no limit it holds its whole cost too, so a limit set later
	// counts it. The counts never wrap. A cost that would take one past
	// math.MaxInt-2^32 takes what is left below that. Queue thresholds
	// count tasks, not cost.
	Cost int
}

// check returns an error wrapping ErrInvalidTask for options out of range.
func (o SubmitOptions) check() error {
	switch {
	case o.Priority < 0 || o.Priority > PriorityLowest:
		return fmt.Errorf("%w: Priority %d is out of range", ErrInvalidTask, int(o.Priority))
	case o.MaxWait < 0:
		return fmt.Errorf("%w: MaxWait %v is negative", ErrInvalidTask, o.MaxWait)
	case o.Cost < 0:
		return fmt.Errorf("%w: Cost %d is negative", ErrInvalidTask, o.Cost)
	}
	return nil
}

// SubmitWith is Submit refined by opts. With opts.Block, a task may find its
// queue full (its group's, or under IsolationOff the global one). Then it
// does not take the rejection. The caller waits, with no task accepted yet,
// until a slot is handed to it. Callers blocked on that queue are served in
// order of priority and then of arrival. Slots freed together are handed one
// after another, each once the task before has its place. So those callers'
// tasks are accepted, announced to the listener and started in that order
// too. The wait ends in one of these ways.
//   - A slot is handed to it. The task is accepted, as if submitted then,
//     and SubmitWith returns its handle.
//   - The ctx ends. SubmitWith returns nil and ctx.Err(), and nothing was
//     submitted.
//   - The opts.MaxWait passes. The task is accepted and turned away with
//     ReasonWaitTimeout through the rejection policy or handler, and
//     SubmitWith returns its handle.
//   - Shutdown or Close begins. SubmitWith returns nil and ErrClosed.
//   - ShutdownGroup or EvictGroup is called for its group. SubmitWith
//     returns nil and an error matching ErrGroupShutdown or ErrGroupEvicted.
//
// A queue whose threshold is Unlimited never blocks anyone. One whose
// threshold is 0 never has a free slot. There a blocked caller walks again
// each time a task of its group gives back a permit. For the global queue,
// any task giving back a permit counts. The caller is accepted once its task
// can start at once. Under IsolationFairShare such a caller that waits for
// the global cap is woken so by its own group's tasks only. So bound its
// wait with MaxWait or its context.
//
// A caller whose ctx is, or derives from, the context of a running task of
// e never blocks, because it may hold the permits it would wait for. So
// opts.Block is ignored for it. Without opts.Block, SubmitWith never waits
// for a slot, as Submit. Like Submit it runs the listener, resolvers and
// backlog warnings inline.
//
// The ctx does two jobs. It bounds the Block wait, and it is the task's
// parent, as for Submit. To bound only the wait, set opts.MaxWait. A ctx
// with a timeout that is cancelled once SubmitWith returns cancels the task
// too.
func SubmitWith[T any](ctx context.Context, e *GroupExecutor, groupKey, taskID string, task Task[T], opts SubmitOptions) (*TaskHandle[T], error) {
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	if groupKey == "" || taskID == "" || task == nil { // checkTask says which
		return nil, checkTask("", groupKey, taskID, task == nil)
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	h, b := newHandle(e, task, opts.Cost)
	if err := e.submit(ctx, &h.t, b, groupKey, taskID, opts); err != nil {
		return nil, err
	}
	return h, nil
}

// Do runs fn on the calling goroutine once it holds the permits that a task
// of groupKey submitted with opts would hold, and returns what fn returns. It
// waits where such a task waits: the same lines, priorities, fair share and
// queue thresholds. With opts.Block it waits for a queue slot as SubmitWith
// does. While it waits it is a record in its line, and no goroutine of the
// executor waits for it. The permits are given back when fn returns or
// panics. A panic goes on up to the caller, as if fn had been called
// directly. Do is counted and reported as a task (stats, listeners, outcome
// counters). Its task ID is "do-" and a number.
//
// The context of fn derives from ctx, as a task's does. So ShutdownGroup,
// EvictGroup, Close and an expired Shutdown cancel it too. If ctx ends
// before the permits are held, Do returns ctx.Err() and fn never runs.
//
// Turned away, Do returns the zero T and a *RejectedError under every
// rejection policy but RejectCallerRuns. That policy runs fn at once without
// permits, unless the group is paused. A RejectionHandler decides as for a
// task. Its value is returned if it is a T, and Rejection.Run runs fn: a
// panic of fn that the handler lets go on up goes on up from Do. Do
// returns the errors SubmitWith returns for bad input, a closed executor or
// a group stopped while it waited.
//
// A Do whose ctx is, or derives from, the context of a running task of e
// runs fn at once under that task's permits, because waiting for permits
// its caller may hold could deadlock. It takes none of its own, and waits
// for no full or paused group (a pause lets running work finish). Queue
// thresholds and opts do not apply. It is still a task of groupKey,
// counted, reported and cancelled as any Do. It shares the permits only
// while the task runs: when the task returns they go back, and fn's
// context is cancelled, even if fn, called on a goroutine the task
// started, still runs. A Do made then with fn's context kept past that
// cancel (context.WithoutCancel) waits as any Do. Once Shutdown or Close
// has begun no new task is counted. Such a Do then runs fn as a part of
// the task calling it, with ctx, unless ctx has ended.
//
// A task turned away holds no permits. So a Do with the context of its
// rejection handler, or of its function run under RejectCallerRuns, waits
// as any Do, but never for a queue slot (opts.Block is ignored there). If
// that task was submitted with the context of a running task, the Do runs
// under the running task's permits.
func Do[T any](ctx context.Context, e *GroupExecutor, groupKey string, fn Task[T], opts SubmitOptions) (T, error) {
	var zero T
	if err := e.check(ctx); err != nil {
		return zero, err
	}
	if groupKey == "" || fn == nil {
		return zero, checkTask("", groupKey, "do", fn == nil)
	}
	if err := opts.check(); err != nil {
		return zero, err
	}
	if e.holdsPermits(ctx) {
		return doInside(ctx, e, groupKey, fn)
	}
	return do(ctx, e, groupKey, fn, opts)
}

// ExecuteAllWith is ExecuteAll with every task submitted as SubmitWith
// submits it with opts. With opts.Block it may wait before each task for a
// queue slot. If ctx ends during such a wait, the tasks not yet submitted
// are reported CANCELLED with ctx.Err(), and it returns ctx.Err(). A task
// whose group is shut down or evicted during its wait is reported CANCELLED
// with ErrGroupShutdown or ErrGroupEvicted, and the others go on.
func ExecuteAllWith[T any](ctx context.Context, e *GroupExecutor, tasks []GroupTask[T], opts SubmitOptions) ([]GroupResult[T], error) {
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	for i, gt := range tasks {
		if err := checkTask(fmt.Sprintf("tasks[%d].", i), gt.GroupKey, gt.TaskID, gt.Task == nil); err != nil {
			return nil, err
		}
	}
	handles := make([]TaskHandle[T], len(tasks))
	results := make([]GroupResult[T], len(tasks))
	var err, policyErr error
	for i, gt := range tasks {
		h := &handles[i]
		serr := e.submit(ctx, &h.t, fnBody[T](gt.Task), gt.GroupKey, gt.TaskID, opts)
		switch {
		case serr == nil:
			continue
		case errors.Is(serr, ErrInvalidPolicy):
			// Its group's chain of parents is wrong. The batch reports it,
			// as Submit would, but the others go on.
			policyErr = cmp.Or(policyErr, serr)
			fallthrough
		case errors.Is(serr, ErrGroupShutdown), errors.Is(serr, ErrGroupEvicted):
			// Its group stopped while it waited for room: the others go on.
			results[i] = notSubmitted(gt, serr)
			continue
		}
		err = serr
		for j := i; j < len(tasks); j++ {
			results[j] = notSubmitted(tasks[j], err)
		}
		handles = handles[:i]
		break
	}
	for i := range handles {
		h := &handles[i]
		if results[i].Status != 0 {
			continue // never submitted
		}
		if !h.t.isDone() {
			select {
			case <-h.t.doneChan():
			case <-ctx.Done():
				e.cancel(&h.t, cancelErr(ctx))
				h.t.wait() // cancel lost only to a completion about to publish
			}
		}
		results[i] = h.result()
	}
	return results, cmp.Or(err, ctx.Err(), policyErr)
}

// notSubmitted is the result of a task of a batch that was never accepted.
// It is CANCELLED with the reason.
func notSubmitted[T any](gt GroupTask[T], err error) GroupResult[T] {
	now := time.Now()
	return GroupResult[T]{
		GroupKey: gt.GroupKey, TaskID: gt.TaskID, Status: StatusCancelled, Err: err,
		Submitted: now, Start: now, End: now,
	}
}

// rank is p as the lines order it, where 0 is the highest.
func (p Priority) rank() uint8 {
	if p == 0 {
		p = PriorityNormal
	}
	return uint8(p - PriorityHighest)
}
