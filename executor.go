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

// ErrClosed is returned by Submit and ExecuteAll once Shutdown or Close has
// been called. It is also the context.Cause of every task cancelled by Close
// or by a Shutdown whose context ended.
var ErrClosed = errors.New("groupconc: executor closed")

// ErrGroupShutdown is the context.Cause of the tasks ShutdownGroup cancels.
var ErrGroupShutdown = errors.New("groupconc: group shut down")

// ErrGroupEvicted is the context.Cause of the tasks EvictGroup cancels.
var ErrGroupEvicted = errors.New("groupconc: group evicted")

var (
	errNilExecutor = errors.New("groupconc: nil *GroupExecutor")
	errNilContext  = fmt.Errorf("%w: nil context", ErrInvalidTask)
)

// GroupExecutor runs tasks with per-group limits. A task takes its permits
// in a fixed order (global in-flight, then the group's bulkhead, then the
// group's concurrency); once it holds them all its function runs on a
// goroutine owned by the executor, which then releases the permits in
// reverse order before completing the task's handle.
//
// A task that has to wait for a permit waits as a record in that layer's
// line, not as a parked goroutine, so a waiting task costs only its handle.
// The task that releases the permit takes the waiting one out of the line
// and carries it through its remaining layers; when it holds them all it
// runs, on the goroutine that just finished the releasing task if that one
// is free (no goroutine is started), otherwise on a new one. Tasks admitted
// inside Submit are likewise run by goroutines of the executor that have
// finished their task, taking the next from a ready queue rather than
// ending; a goroutine is started only when none is free, so a task never
// waits for another task to end, and a goroutine that finds nothing to do
// ends (the executor keeps none idle). So one goroutine may run several
// tasks one after another; each task still runs alone on it, with its own
// context, and a panic or runtime.Goexit in one task never affects the
// next. What a task sets on its goroutine itself outlives it, as on any
// pooled goroutine: undo runtime.LockOSThread before returning, and set
// profiler labels with pprof.Do, which restores them.
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
	policy    atomic.Pointer[GroupPolicy] // replaced by UpdatePolicy
	updating  sync.Mutex                  // serialises UpdatePolicy
	pressure  pressure
	global    *groupstate.Global[task]
	groups    *groupstate.Registry[task]
	root      context.Context         // parent of every group scope
	closeRoot context.CancelCauseFunc // cancels every task, with ErrClosed
	gate      gate                    // also counts the tasks submitted
	epoch     time.Time               // when New made e; see clock

	ready readyQueue // tasks admitted inside Submit, until a goroutine takes them

	// The outcome counters, kept by whoever completes a handle, usually
	// the goroutine that runs the task, just before it leaves the gate:
	// they share the cache line of gate.left, not that of gate.entered.
	succeeded, failed, cancelled, rejected atomic.Uint64
}

// New returns an executor governed by policy; nil means DefaultPolicy().
func New(policy *GroupPolicy) *GroupExecutor {
	policy = policy.orDefault()
	root, closeRoot := context.WithCancelCause(context.Background())
	fair := policy.isolation == IsolationFairShare
	global := groupstate.NewGlobal[task](policy.globalInFlight, policy.globalQueue, fair)
	e := &GroupExecutor{
		global:    global,
		root:      root,
		closeRoot: closeRoot,
		gate:      gate{drained: make(chan struct{})},
		epoch:     time.Now(),
	}
	e.policy.Store(policy)
	e.groups = groupstate.NewRegistry(root, global, policy.limits, e.clock)
	e.groups.SetIdleTTL(int64(policy.idleTTL))
	return e
}

// listener returns the listener of the policy in force.
func (e *GroupExecutor) listener() TaskLifecycleListener { return e.policy.Load().listener }

// UpdatePolicy makes p the executor's policy. From its return, new groups
// resolve their limits from p, and every known group's limits
// (concurrency, bulkhead, queue threshold, weight) are resolved again from
// p and govern every permit handed out afterwards; so do p's global limit
// and threshold, rejection policy and handler, listener, pressure warnings
// and idle TTL.
//
// A raised limit starts the waiting tasks that now fit at once, in their
// order. A lowered limit interrupts nothing: no new task starts in that
// group (for the global limit, anywhere) until the running count is below
// the new limit, the one case where Running may exceed MaxConcurrency. A
// lowered queue threshold rejects no task already waiting; new tasks are
// rejected while the waiting count is at or above it. Waiting tasks keep
// their place in line. UpdatePolicy does not wait for running tasks.
//
// It returns an error wrapping ErrInvalidPolicy for a nil p or one whose
// Isolation differs from the executor's (the mode is fixed for its life),
// and ErrClosed once Shutdown or Close has begun. Concurrent calls are
// serialised.
func (e *GroupExecutor) UpdatePolicy(p *GroupPolicy) error {
	if e == nil {
		return errNilExecutor
	}
	if p == nil {
		return fmt.Errorf("%w: UpdatePolicy: nil policy", ErrInvalidPolicy)
	}
	p = p.orDefault()
	e.updating.Lock()
	defer e.updating.Unlock()
	if e.gate.closed.Load() {
		return ErrClosed
	}
	if was := e.policy.Load().isolation; p.isolation != was {
		return fmt.Errorf("%w: UpdatePolicy: Isolation is %v, want %v: an executor keeps its mode", ErrInvalidPolicy, p.isolation, was)
	}
	e.policy.Store(p)
	handed := e.global.SetLimits(p.globalInFlight, p.globalQueue, nil)
	handed = e.groups.Update(p.limits, handed)
	e.groups.SetIdleTTL(int64(p.idleTTL))
	// The tasks the raised limits let through were handed a permit away
	// from the executor's goroutines: each goes on on one of its own.
	for _, t := range handed {
		go t.resume()
	}
	return nil
}

// clock returns the time elapsed since e's epoch, read on the monotonic clock
// alone, which costs about half of time.Now; a task keeps its times as such
// offsets. e.epoch.Add of one is a time with the monotonic reading time.Now
// would have had; its wall-clock part misses any step of the system clock
// since New.
func (e *GroupExecutor) clock() int64 { return int64(time.Since(e.epoch)) }

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
	if groupKey == "" || taskID == "" || task == nil { // checkTask says which
		return nil, checkTask("", groupKey, taskID, task == nil)
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
		if !h.t.isDone() {
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
// A task that must wait is left in its line as a record, with no goroutine:
// it gets one (or the goroutine of the task that hands it its last permit)
// when it can run.
func (e *GroupExecutor) submit(ctx context.Context, t *task, b body, key, id string) error {
	// After this, Shutdown waits for t; enter fails once Shutdown or Close
	// has begun, so no task is accepted after the drain started.
	if !e.gate.enter() {
		return ErrClosed
	}
	e.groups.ForgetIdle()
	g := e.groups.Get(key)
	t.init(ctx, e, g, id, b)
	owned := true // until t is handed to a line or a goroutine
	defer func() {
		if owned {
			e.settle(t, false)
		}
	}()
	notifySubmitted(e.listener(), key, id)
	if t.context().Err() != nil {
		e.endWaiting(t)
		return nil
	}
	switch out, reason := t.permits.Try(); out {
	case groupstate.MustWait:
		owned = false
		e.waiting(t)
		e.pressureWaiting(g)
		return nil
	case groupstate.Rejected:
		if !e.turnAway(t, reason) {
			return nil // completed REJECTED: no goroutine needed
		}
	}
	owned = false
	e.launch(t)
	return nil
}

// launch has t, admitted inside Submit (or rejected there, to be run by its
// handler or caller-runs policy), run on a goroutine of the executor: it
// puts t in the ready queue, and starts a goroutine to take it out only if
// no goroutine of the executor is already bound to look there. Creating a
// goroutine is most of what running a trivial task costs, so goroutines
// are reused: one that has run its task takes the next from the queue
// rather than ending (see readyQueue).
func (e *GroupExecutor) launch(t *task) {
	if e.ready.push(t) {
		go e.serve()
	}
}

// serve is the body of a goroutine started by the ready queue: it takes
// the queue's role if it is still on offer, and serves the queue.
func (e *GroupExecutor) serve() {
	if e.ready.arrive() {
		e.work(e.take(), 0)
	}
}

// take takes the next task out of the ready queue; the caller holds the
// queue's role and gives it up here. It returns nil if the queue is empty.
// Before returning a task it leaves the role to another goroutine if more
// tasks are ready, since the caller's task may run for long.
func (e *GroupExecutor) take() *task {
	for {
		t, more := e.ready.pop()
		switch {
		case t == nil && !e.ready.release():
			return nil
		case t == nil: // a task came as the role was given up
			continue
		case more || e.ready.release():
			if e.ready.hand() {
				go e.serve()
			}
		}
		return t
	}
}

// resume runs GroupExecutor.resume on a goroutine of its own.
func (t *task) resume() { t.exec.resume(t) }

// drop runs GroupExecutor.drop on a goroutine of its own.
func (t *task) drop() { t.exec.drop(t) }

// callerEnded takes t out of its line, and ends it, when its caller's
// context ends while it waits (see taskContext.watch).
func (t *task) callerEnded() {
	if t.permits.Leave() {
		t.exec.drop(t)
	}
}

// waiting follows up on a task that Submit left in a line, which owns it
// now: it watches the caller's context, whose end takes the task out of
// line, and takes the task out itself if it was cancelled as it joined.
func (e *GroupExecutor) waiting(t *task) {
	t.context().watch()
	if e.stopRequested(t) && t.permits.Leave() {
		e.endWaiting(t)
		e.settle(t, false)
	}
}

// stopRequested reports whether a waiting task should leave its line: it
// was cancelled by its handle, its caller's context or its group scope
// (ShutdownGroup, EvictGroup, and Close through the executor's context).
// Each of those first records why and then makes the task leave (Close
// sweeps the lines once the cancel has reached every scope); a task that
// was between two lines at that moment is in none, and finds out here,
// after joining the next. So the task's context is done when it ends.
func (e *GroupExecutor) stopRequested(t *task) bool {
	return t.claimed() || t.caller.Err() != nil || t.permits.Scope().Err() != nil
}

// work is the body of a goroutine of the executor: it runs t, which got its
// last permit at start (an offset from its Submitted; see task.since), and
// then, rather than ending, each task that the released permits admitted and
// that it was given to run next, and then tasks from the ready queue while
// it can take the queue's role. A task taken from the ready queue was
// admitted inside Submit: its start is its Submitted (offset 0).
func (e *GroupExecutor) work(t *task, start int64) {
	for {
		for t != nil {
			t, start = e.runOne(t, start)
		}
		if !e.ready.claim() {
			return
		}
		if t = e.take(); t == nil {
			return
		}
	}
}

// runOne runs t (or handles its rejection) and settles it, and returns the
// task to run next on this goroutine, if any.
func (e *GroupExecutor) runOne(t *task, start int64) (next *task, nextStart int64) {
	normal := false
	defer func() { next, nextStart = e.settle(t, normal) }()
	switch {
	case t.reason() != "":
		// Whoever waits for the permits t gave back need not wait for the
		// rejection handler.
		e.handOn(&t.permits, false)
		e.rejectAsync(t)
	case e.cancelledBeforeRun(t):
		// A context that ended while the last permit was granted still
		// wins: the function never starts on a cancelled context.
		e.endWaiting(t)
	default:
		notifyStarted(e.listener(), t.key(), t.id)
		t.body.run(t.context(), start)
	}
	normal = true
	return nil, 0
}

// resume is the body of a goroutine started for a task handed its permit
// away from the executor's goroutines (by a Submit, say): it carries the
// task on, and runs it if it can.
func (e *GroupExecutor) resume(t *task) {
	run, start, ended := e.carryOn(t)
	switch {
	case run:
		e.work(t, start)
	case ended:
		e.work(e.handOn(&t.permits, true))
	}
}

// drop ends a task taken out of its line because it was cancelled, on a
// goroutine of its own, as its wait would have ended: the permits it holds
// go back, its handle completes, the listener hears of it.
func (e *GroupExecutor) drop(t *task) {
	e.endWaiting(t)
	e.work(e.settle(t, true))
}

// dropAll drops tasks swept out of their lines.
func (e *GroupExecutor) dropAll(swept []*task) {
	for _, t := range swept {
		go t.drop()
	}
}

// handOn carries on with the tasks that p's releases handed a permit to.
// On a goroutine of the executor (inline) it walks each through its
// remaining layers, and returns one that can run, with the time it got its
// last permit (an offset from its Submitted), for this goroutine to run
// next; the others that can run get goroutines of their own. Elsewhere (on a caller's goroutine, or where user
// code such as a listener would delay them) each task handed a permit gets
// a goroutine at once, which does the walking.
func (e *GroupExecutor) handOn(p *groupstate.Permits[task], inline bool) (next *task, start int64) {
	for t := p.Handed(); t != nil; t = p.Handed() {
		if !inline {
			go t.resume()
			continue
		}
		run, at, ended := e.carryOn(t)
		switch {
		case ended:
			p.Adopt(&t.permits) // t's releases handed permits on too
		case run && next == nil:
			next, start = t, at
		case run:
			go e.work(t, at)
		}
	}
	return next, start
}

// carryOn walks t, just handed a permit, through its remaining layers. It
// reports whether t is to run now (it holds every permit, or it was rejected
// and its handler or caller-runs policy runs it), with the time it got its
// last permit (an offset from its Submitted); or whether it ended here
// (rejected, or found cancelled), in which case the permits it gave back may
// have gone to others, for the caller to carry on with. Otherwise t waits
// in its next line.
func (e *GroupExecutor) carryOn(t *task) (run bool, start int64, ended bool) {
	out, reason := t.permits.Resume()
	switch out {
	case groupstate.Admitted:
		return true, t.since(), false
	case groupstate.MustWait:
		if e.stopRequested(t) && t.permits.Leave() {
			e.endWaiting(t)
			e.retire(t)
			return false, 0, true
		}
		return false, 0, false
	}
	if e.turnAway(t, reason) {
		return true, 0, false
	}
	e.retire(t)
	return false, 0, true
}

// turnAway records that a queue threshold turned t away, for the reason
// given, and tells the listener. It reports whether t is still to run, on a
// goroutine of the executor: its rejection handler or the caller-runs policy
// decides its outcome there. Otherwise it completes t REJECTED here.
func (e *GroupExecutor) turnAway(t *task, reason string) (run bool) {
	t.setReason(reason)
	notifyRejected(e.listener(), t.key(), t.id, reason)
	if e.policy.Load().rejectionHandler != nil || e.policy.Load().rejection == RejectCallerRuns {
		return true
	}
	e.reject(t)
	return false
}

// settle ends a task's life in the executor, deferred on the goroutine that
// owns the task at the time, and carries on with the tasks its permits were
// handed to: inline, it returns one of them for this goroutine to run next
// (see handOn). On every path the task has completed by then; but a
// listener method that calls runtime.Goexit (t.FailNow in a test's
// listener, say) unwinds the goroutine from the middle, and settle still
// releases the permits, completes the handle FAILED and lets Shutdown stop
// waiting, so the task is never stranded.
func (e *GroupExecutor) settle(t *task, inline bool) (*task, int64) {
	e.retire(t)
	return e.handOn(&t.permits, inline)
}

// retire releases t's permits (keeping the tasks they were handed to in
// t.permits), completes its handle FAILED if nothing did, and takes it out of
// the count Shutdown waits on.
func (e *GroupExecutor) retire(t *task) {
	t.permits.Release()
	t.permits.Exit()
	if !t.claimed() {
		t.finish(StatusFailed, panicError(nil), false)
	}
	t.context().release()
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
	c := t.context()
	if c.Err() == nil && e.root.Err() == nil && (!c.built() || c.caller.Err() == nil && c.permits.Scope().Err() == nil) {
		return false
	}
	<-c.Done()
	return true
}

// endWaiting completes a task cancelled before it ran; the listener hears
// OnCompleted, as for any task cancelled while waiting.
func (e *GroupExecutor) endWaiting(t *task) {
	t.releasePermits()
	c := t.context()
	t.finish(StatusCancelled, cancelErr(c), false)
	t.body.completed()
}

// rejectAsync handles a rejection on the task's goroutine.
func (e *GroupExecutor) rejectAsync(t *task) {
	ctx := t.context()
	switch {
	case e.policy.Load().rejectionHandler != nil:
		t.body.handleRejection(ctx, e.policy.Load().rejectionHandler)
	case e.policy.Load().rejection == RejectCallerRuns:
		if ctx.Err() != nil {
			t.finish(StatusCancelled, cancelErr(ctx), false)
			return
		}
		notifyStarted(e.listener(), t.key(), t.id)
		t.body.run(ctx, t.since())
	default:
		e.reject(t)
	}
}

// reject completes t REJECTED; under RejectAbort Await also returns the error.
func (e *GroupExecutor) reject(t *task) {
	err := &RejectedError{GroupKey: t.key(), TaskID: t.id, Reason: t.reason()}
	t.finish(StatusRejected, err, e.policy.Load().rejection == RejectAbort)
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

// ShutdownGroup cancels every task of groupKey, with cause ErrGroupShutdown:
// waiting tasks end CANCELLED at once, running ones see their context
// cancelled. Other groups are untouched. The group keeps its limits, and
// tasks submitted to it afterwards are accepted as usual. It does nothing
// for an unknown group and does not wait.
func (e *GroupExecutor) ShutdownGroup(groupKey string) {
	if g, ok := e.groups.Lookup(groupKey); ok {
		e.dropAll(g.Shutdown(ErrGroupShutdown, nil))
	}
}

// EvictGroup cancels every task of groupKey, as ShutdownGroup does but with
// cause ErrGroupEvicted, and forgets the group: its limits are resolved
// again for the next task, and it is gone from Stats. Tasks still running on the evicted group's permits
// release them into its old semaphores, never into the new group's; until
// they return, the old and new group together may run more than the limit.
func (e *GroupExecutor) EvictGroup(groupKey string) {
	e.dropAll(e.groups.Evict(groupKey, ErrGroupEvicted, nil))
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
			e.stopPressure()
			e.cancelAll()
			return ctx.Err()
		}
	}
	e.stopPressure()
	e.closeRoot(ErrClosed)
	return nil
}

// Close stops accepting tasks and cancels every task, with cause ErrClosed,
// and returns at once: waiting tasks end CANCELLED; running functions see
// their context cancelled, and their goroutines end when they return. Close
// is idempotent and always returns nil. Use Shutdown to wait for tasks.
func (e *GroupExecutor) Close() error {
	e.gate.close()
	e.stopPressure()
	e.cancelAll()
	return nil
}

// cancelAll cancels every task, with cause ErrClosed, and ends the waiting
// ones. The cancel reaches every group scope before closeRoot returns, so
// the sweep after it finds, or is followed by, scopes already done.
func (e *GroupExecutor) cancelAll() {
	e.closeRoot(ErrClosed)
	e.dropAll(e.groups.SweepAll(nil))
}

// gate counts the accepted tasks, and those that finished, and refuses new
// ones once closed. Entering takes no lock: entered holds both the count
// and the closed bit, so either enter sees the bit and fails, or close sees
// the task counted and the drain waits for it. The two counts only grow,
// and sit on cache lines of their own, so that the goroutine submitting
// tasks and the goroutines running them, which usually enter and leave,
// do not write to the same line.
type gate struct {
	drained chan struct{} // closed when the gate is closed and every task left
	closed  atomic.Bool   // set once entered carries closedBit
	signals atomic.Bool   // set by whoever closes drained
	_       [64]byte
	entered atomic.Uint64 // accepted tasks (Stats' Submitted); closedBit once closed
	_       [64]byte
	left    atomic.Uint64 // accepted tasks that have finished
}

const closedBit = 1 << 62

func (g *gate) enter() bool {
	for {
		n := g.entered.Load()
		if n&closedBit != 0 {
			return false
		}
		if g.entered.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// submitted returns how many tasks were accepted.
func (g *gate) submitted() uint64 { return g.entered.Load() &^ closedBit }

func (g *gate) leave() {
	// entered no longer grows once closed is set. Of the last leave and
	// close, the later one sees the other's write: both write, then read
	// what the other wrote.
	left := g.left.Add(1)
	if g.closed.Load() && left == g.submitted() {
		g.signal()
	}
}

func (g *gate) close() {
	n := g.entered.Or(closedBit) &^ closedBit
	g.closed.Store(true)
	if g.left.Load() == n {
		g.signal()
	}
}

// signal closes drained, once.
func (g *gate) signal() {
	if g.signals.CompareAndSwap(false, true) {
		close(g.drained)
	}
}

// readyQueue holds the tasks admitted inside Submit until a goroutine of the
// executor takes them out to run them. Submit pushes on a lock-free stack,
// in; the queue's role, held by one goroutine at a time, reverses what it
// takes from in into out, so that tasks are taken oldest first.
//
// Goroutines are reused, and a task in the queue never waits for another
// task to end: whenever the queue holds a task, some goroutine that runs
// no task is bound to take it out. That is the holder of the role, or a
// goroutine started for the role that has not run yet (the role is then on
// offer, and the first goroutine of the executor to finish its task may
// take it instead, which is how goroutines are reused), or, while in was
// empty, the Submit that pushed on it, which puts the role on offer if it
// was free. The holder hands the role on (puts it on offer) before it runs
// the task it took if more are ready, and otherwise gives it up and looks
// again, so a push it did not see is never left alone. No goroutine waits
// for work: one that finds nothing to do ends.
type readyQueue struct {
	in atomic.Pointer[task] // pushed tasks, newest first, linked by nextLaunch
	_  [56]byte
	// The role (roleMask bits) and, above them, how many goroutines were
	// started for it and have not yet run. The role on offer always has
	// one of those goroutines coming.
	word atomic.Uint64
	out  *task // tasks taken from in, oldest first; touched by the role's holder only
}

const (
	roleFree    = 0 // nobody is bound to look at the queue, which has nothing in out
	roleHeld    = 1 // a goroutine holds the role and is looking at the queue
	roleOffered = 2 // a goroutine started for the role will take it, unless another does first
	roleMask    = 3
	oneComing   = 4 // one goroutine started for the role, not yet run
)

// push adds t to the queue. It reports whether the caller must start a
// goroutine for the role (see GroupExecutor.serve).
func (q *readyQueue) push(t *task) (start bool) {
	for {
		head := q.in.Load()
		t.nextLaunch = head
		if q.in.CompareAndSwap(head, t) {
			if head != nil {
				return false // whoever is bound to take head takes t with it
			}
			break
		}
	}
	// The holder gives the role up before it looks at in for the last
	// time: either it sees t there, or this sees the role free.
	for {
		w := q.word.Load()
		if w&roleMask != roleFree {
			return false
		}
		if start, w2 := offer(w); q.word.CompareAndSwap(w, w2) {
			return start
		}
	}
}

// offer returns the word with the role, free or held, put on offer, and
// whether a goroutine must be started for it: one already coming will do.
func offer(w uint64) (start bool, w2 uint64) {
	coming := w &^ roleMask
	if coming == 0 {
		return true, roleOffered | oneComing
	}
	return false, roleOffered | coming
}

// hand puts the held role on offer. It reports whether the caller must
// start a goroutine for it.
func (q *readyQueue) hand() (start bool) {
	for {
		w := q.word.Load()
		if start, w2 := offer(w); q.word.CompareAndSwap(w, w2) {
			return start
		}
	}
}

// arrive is called first by a goroutine started for the role: it takes the
// role if it is on offer and reports whether it did; otherwise the
// goroutine has nothing to do.
func (q *readyQueue) arrive() bool {
	for {
		w := q.word.Load()
		w2 := w - oneComing
		if w&roleMask == roleOffered {
			w2 = w2&^roleMask | roleHeld
		}
		if q.word.CompareAndSwap(w, w2) {
			return w&roleMask == roleOffered
		}
	}
}

// claim is called by a goroutine of the executor that has finished its
// tasks: it takes the role if it is on offer, or free while a task is in
// the queue, and reports whether it did.
func (q *readyQueue) claim() bool {
	for {
		w := q.word.Load()
		switch w & roleMask {
		case roleHeld:
			return false
		case roleFree:
			if q.in.Load() == nil {
				return false
			}
		}
		if q.word.CompareAndSwap(w, w&^roleMask|roleHeld) {
			return true
		}
	}
}

// pop takes the oldest task out of the queue, holding the role, and reports
// whether out holds more; nil if the queue is empty.
func (q *readyQueue) pop() (t *task, more bool) {
	if q.out == nil {
		// Reverse what was pushed since the last time: oldest first.
		for t := q.in.Swap(nil); t != nil; {
			next := t.nextLaunch
			t.nextLaunch = q.out
			q.out, t = t, next
		}
	}
	t = q.out
	if t == nil {
		return nil, false
	}
	q.out, t.nextLaunch = t.nextLaunch, nil
	return t, q.out != nil || q.in.Load() != nil
}

// release gives up the held role, out being empty, and then looks at in
// again: if a task came, it takes the role back, if it still can, and
// reports true.
func (q *readyQueue) release() (held bool) {
	q.word.And(^uint64(roleMask)) // roleFree; only the holder changes the role
	return q.claim()
}
