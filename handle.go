package groupconc

import (
	"context"
	"fmt"
	"time"

	"github.com/kobe/groupconc/internal/groupstate"
)

// errNoHandle is the Err of the result of a nil or zero TaskHandle.
var errNoHandle = fmt.Errorf("%w: nil or zero TaskHandle, not returned by Submit", ErrInvalidTask)

// TaskHandle is the caller's view of one submitted task. It gives its
// result, a way to wait for it, and a way to cancel it. Submit returns it.
// It is safe for concurrent use. Any number of goroutines may Await, Wait or
// Cancel the same handle and all see the same result.
//
// A nil *TaskHandle, such as Submit returns with an error, or a zero
// TaskHandle, stands for no task. It acts as a handle already complete. Its
// result is CANCELLED, with zero times and an Err matching ErrInvalidTask,
// and Await returns that error too. GroupKey and TaskID are empty, Cancel
// reports false, and Position reports false. So the misuse shows as an
// error, not as a panic or a wait that never ends.
//
// The handle completes exactly once. Completing it does not stop a running
// function, whose goroutine belongs to the executor. After Cancel, the
// function keeps running with its context cancelled. It keeps its permits
// until it returns.
type TaskHandle[T any] struct {
	// value comes first, because a zero-size value last (T = struct{}) would
	// pad the handle by a word, so that &value points inside it.
	value T // written by the task's body on success; read only if the result says SUCCESS
	t     task
}

// GroupKey returns the task's group key.
func (h *TaskHandle[T]) GroupKey() string {
	if !h.made() {
		return ""
	}
	return h.t.key()
}

// TaskID returns the task's ID.
func (h *TaskHandle[T]) TaskID() string {
	if !h.made() {
		return ""
	}
	return h.t.taskID()
}

// Done returns a channel that is closed when the handle completes.
func (h *TaskHandle[T]) Done() <-chan struct{} {
	if !h.made() {
		return closedChan
	}
	return h.t.doneChan()
}

// IsDone reports whether the handle has completed.
func (h *TaskHandle[T]) IsDone() bool { return !h.made() || h.t.isDone() }

// Cancel cancels the task's context, with cause context.Canceled. It
// completes the handle at once as CANCELLED with Err context.Canceled and
// End now. Start is when the task came to hold its permits if its function
// had begun, or now if not. Cancel reports whether it did so. It reports
// false if the handle had already completed. It reports false too once the
// function has returned, or the rejection handler: that outcome stands,
// and the handle completes with it a moment later. A task whose function
// has not begun never runs. Waiting for permits, or holding them all and
// queued for a goroutine, it gives back its permits and its queue slot
// before Cancel returns, so a task submitted next may take them. Once a
// goroutine has taken it to run, its function still never starts, but it
// keeps its permits until that goroutine is done with it, a moment later.
// A running function sees its context cancelled and keeps its permits
// until it returns.
func (h *TaskHandle[T]) Cancel() bool {
	if !h.made() {
		return false
	}
	return h.t.exec().cancel(&h.t, context.Canceled)
}

// Await waits until the handle completes or ctx ends, whichever comes first.
//
// When the handle completes, Await returns its result. For a task rejected
// under RejectAbort it also returns the *RejectedError. In every other case
// the error is nil, and the task's own failure is in the result. When ctx
// ends first, Await returns a CANCELLED result with Err ctx.Err(), and
// ctx.Err(). The task goes on. A nil ctx waits like Wait.
func (h *TaskHandle[T]) Await(ctx context.Context) (GroupResult[T], error) {
	if !h.made() {
		return noTask[T](), errNoHandle
	}
	if ctx == nil || h.t.isDone() {
		return h.Wait(), h.t.awaitErr()
	}
	select {
	case <-h.t.doneChan():
		return h.result(), h.t.awaitErr()
	case <-ctx.Done():
	}
	if h.t.isDone() { // completed as ctx ended: the real result wins
		return h.result(), h.t.awaitErr()
	}
	now := time.Now()
	err := ctx.Err()
	return GroupResult[T]{
		GroupKey:  h.t.key(),
		TaskID:    h.t.taskID(),
		Status:    StatusCancelled,
		Err:       err,
		Submitted: h.t.at(0),
		Start:     now,
		End:       now,
	}, err
}

// Wait blocks until the handle completes and returns its result.
func (h *TaskHandle[T]) Wait() GroupResult[T] {
	if !h.made() {
		return noTask[T]()
	}
	h.t.wait()
	return h.result()
}

// newHandle returns the handle of a task of cost running fn, and the
// task's body. The handle is made with room for the task's Ext if it may
// need one (see withExt).
func newHandle[T any](e *GroupExecutor, fn Task[T], cost int) (*TaskHandle[T], body) {
	if !e.withExt(cost) {
		return new(TaskHandle[T]), fnBody[T](fn)
	}
	r := &roomy[TaskHandle[T]]{x: extBody{body: fnBody[T](fn)}}
	return &r.rec, &r.x
}

// roomy is a task's record, a handle or a Do's, made with room for the
// task's Ext in the same allocation.
type roomy[R any] struct {
	rec R
	x   extBody // the task's body, once its own body is put in it
}

// withExt reports whether a task of cost is to be made with room for its
// Ext, because it may need one: its cost is above one, or the policy gives
// groups parents. Its body is then an extBody made in the task's own
// allocation, which extend uses, so the Ext costs no allocation of its own.
// A task of a group at the top leaves that room unused. ExecuteAll makes
// its handles in one slice, with no such room: extend makes the Ext of
// each task that needs one.
func (e *GroupExecutor) withExt(cost int) bool {
	return cost > 1 || e.policy.Load().hasParents()
}

// extend gives t the record of its permits beyond one per layer, when its
// cost is above one or its group has a parent (see groupstate.Ext). The
// record is kept with t's body, which it wraps (extBody), so that it costs
// the task no word, and no allocation when the task was made with room for
// it (withExt).
func (e *GroupExecutor) extend(t *task, cost int) {
	if t.permits.NeedsExt(cost) {
		e.extendNow(t, cost)
	}
}

func (e *GroupExecutor) extendNow(t *task, cost int) {
	x, made := t.body.(*extBody) // made with the task: see withExt
	if !made {
		x = &extBody{body: t.body}
		t.body = x
	}
	t.permits.Extend(&x.ext, cost)
}

// extBody is the body of an extended task: its own body, and its Ext.
type extBody struct {
	body
	ext groupstate.Ext
}

// extOf returns the Ext of t, an extended task. The assertion's second
// result is unused: without the panic path the hook needs no stack frame.
func extOf(t *task) *groupstate.Ext {
	x, _ := t.body.(*extBody)
	return &x.ext
}

// made reports whether Submit returned h. A nil or zero handle stands for
// no task (see TaskHandle). Submit sets caller before it returns h.
func (h *TaskHandle[T]) made() bool { return h != nil && h.t.caller != nil }

// noTask is the result of a nil or zero handle.
func noTask[T any]() GroupResult[T] {
	return GroupResult[T]{Status: StatusCancelled, Err: errNoHandle}
}

// result builds the result. Call it only once the task has completed.
func (h *TaskHandle[T]) result() GroupResult[T] {
	return h.resultOf(h.t.finalResult())
}

// resultOf builds the result of the task's outcome. That is its status, Err,
// and Start and End as offsets from Submitted, and the value if it
// succeeded.
func (h *TaskHandle[T]) resultOf(status TaskStatus, start, end int64, err error) GroupResult[T] {
	t := &h.t
	submitted := t.at(0)
	r := GroupResult[T]{
		GroupKey:  t.key(),
		TaskID:    t.taskID(),
		Status:    status,
		Err:       err,
		Submitted: submitted,
		Start:     submitted.Add(time.Duration(start)),
		End:       submitted.Add(time.Duration(end)),
	}
	if r.Status == StatusSuccess {
		r.Value = h.value
	}
	return r
}

// WaitPosition is where a waiting task stands (see TaskHandle.Position).
type WaitPosition struct {
	// Limit names the limit the task waits for: "paused" (its group, or an
	// ancestor, is paused), "bulkhead" or "concurrency" (a group's limits),
	// or "global" (the global cap).
	Limit string
	// Group is the key of the group whose limit it is: the task's own, or
	// an ancestor's. It is "" for the global cap.
	Group string
	// Ahead is how many tasks of that limit's line are served before it.
	// A task waits first at the pause nearest it. It may stand in an
	// ancestor's pause line, if its group was paused after it joined. At
	// a pause, Ahead counts the tasks that wait there first. It counts
	// them in whichever pause line they stand.
	// Under IsolationFairShare the global line serves groups in turn. So
	// there it counts the task's own group's tasks only (at a parent's
	// line, those of its child's subtree). A costly task the fair choice
	// fell on is served first, whatever its priority, so it counts too.
	Ahead int
}

// Position reports where the task waits while it waits for a permit. It
// reports false once the task holds its permits or has ended. It reports
// false too for the moment the task moves from one line to the next. A
// new task may wait, before a limit, for tasks of its group handed
// permits to walk on. Then it names that limit, and counts those ahead. It
// walks the task's line under the line's lock. So it costs the length of
// the line, and is meant for explaining a wait, not for polling.
func (h *TaskHandle[T]) Position() (WaitPosition, bool) {
	if !h.made() {
		return WaitPosition{}, false
	}
	limit, group, ahead, ok := h.t.permits.Where()
	return WaitPosition{Limit: limit, Group: group, Ahead: ahead}, ok
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
