package groupconc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kobe/groupconc/internal/groupstate"
	"github.com/kobe/groupconc/internal/readyq"
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
	errNilExecutor = fmt.Errorf("%w: nil or zero GroupExecutor, not made by New", ErrClosed)
	errNilContext  = fmt.Errorf("%w: nil context", ErrInvalidTask)
)

// GroupExecutor runs tasks with per-group limits. A task takes its permits
// in the fixed order of the policy's IsolationMode. It runs on a goroutine
// owned by the executor, and gives its permits back in reverse order before
// its handle completes.
//
// A task that must wait for a permit waits as a record in a line, not as a
// parked goroutine. The line serves the highest priority first (see
// SubmitWith). Tasks of one priority go in the order Submit took their
// places. A new task never passes a waiting one of its priority or higher.
// The task that gives a permit back carries the waiting one on. It runs that
// task on its own goroutine when it can.
//
// Goroutines are reused. One that has run a task runs the next ready one
// rather than ending. A new one is started only when none is free. So a
// ready task never waits for a running one, and none is kept idle. Each task
// still runs alone, with its own context. A panic or runtime.Goexit in one
// never affects the next. What a task sets on its goroutine itself outlives
// it, as on any pooled goroutine. So undo runtime.LockOSThread, and set
// profiler labels with pprof.Do.
//
// Groups are created on first use, with limits resolved from the policy.
// They are remembered until EvictGroup, or with IdleGroupTTL until idle.
//
// A GroupExecutor is safe for concurrent use. Create it with New. A nil
// *GroupExecutor, or a zero GroupExecutor, acts as one closed from the
// start. Every call that returns an error returns one matching ErrClosed.
// The others do nothing and report nothing. Stats is zero, GroupStats false,
// Policy nil. So the misuse shows as an error, not as a panic. Call Shutdown
// or Close when done with an executor. Until then its group contexts stay
// registered with each other, though no goroutine is kept.
type GroupExecutor struct {
	policy    atomic.Pointer[GroupPolicy] // replaced by UpdatePolicy
	updating  sync.Mutex                  // serialises UpdatePolicy, SetGroupOverride and ExplainGroup
	overrides overrides                   // the groups' overrides, above the policy
	pressure  pressure
	global    *groupstate.Global[task]
	groups    *groupstate.Registry[task]
	epoch     time.Time               // when New made e; see clock. Read per task: kept off the lines tasks write
	root      context.Context         // parent of every group scope
	closeRoot context.CancelCauseFunc // cancels every task, with ErrClosed
	gate      gate                    // also counts the tasks submitted, and how they ended
	blocking  callers                 // callers blocked for a queue slot
	reparks   reparks                 // paused groups a repark is due for

	ready readyq.Queue[task, *task] // tasks admitted inside Submit, until a goroutine takes them

	globalTuning atomic.Pointer[tuning] // the adaptive global cap, if any; replaced under updating

	crew    crew          // the executor's goroutines, which Shutdown waits for
	runners runners       // which task each of them runs (see runners.go)
	doCalls atomic.Uint64 // Do's task IDs
}

// New returns an executor governed by policy. A nil policy means
// DefaultPolicy().
func New(policy *GroupPolicy) *GroupExecutor {
	policy = policy.orDefault()
	fair := policy.isolation == IsolationFairShare
	global := groupstate.NewGlobal[task](policy.globalInFlight, policy.globalQueue, fair)
	e := &GroupExecutor{
		global:  global,
		gate:    newGate(),
		crew:    newCrew(),
		runners: newRunners(),
		epoch:   time.Now(),
	}
	e.root, e.closeRoot = context.WithCancelCause(context.Background())
	global.SetHooks(wake, e.goEndDisplaced, e.stopRequested)
	global.SetExt(extOf)
	global.SetDisplacing(policy.displaces())
	e.policy.Store(policy)
	e.groups = groupstate.NewRegistry(e.root, global, e.limits, e.clock)
	e.groups.Owner = e // a task finds its executor there (see task.exec)
	kept := func(key string) bool { _, ok := e.groups.Lookup(key); return ok }
	e.groups.SetParents(func(key string) ([]string, error) { return e.policy.Load().parentChain(key, kept) }, keptTooDeep)
	e.groups.SetCycleError(crossedCycle)
	e.groups.SetRemoved(e.overrides.drop)
	e.groups.SetIdleTTL(int64(policy.idleTTL))
	e.globalTuning.Store(newTuning(policy.adaptiveGlobal, "", policy.globalInFlight, Unlimited))
	return e
}

// UpdatePolicy makes p the executor's policy. From its return, new groups
// resolve their limits from p. Every known group's limits (concurrency,
// bulkhead, queue threshold, weight) are resolved again from p. They govern
// every permit handed out afterwards. So do p's global limit and threshold,
// rejection policy and handler, listener, pressure warnings and idle TTL. A
// group's override (SetGroupOverride) stays above p.
//
// A raised limit starts the waiting tasks that now fit at once, in their
// order. A lowered limit interrupts nothing. No new task starts in that
// group (for the global limit, anywhere) until the running count is below
// the new limit. This is the one case where Running may exceed
// MaxConcurrency. A task handed its last permit before the change counts
// as running already, and starts. The lowered limits take hold before the
// raised ones, so no task starts under a mix of the two that neither
// policy allows. A lowered queue threshold rejects no task already
// waiting. New tasks are rejected while the waiting count is at or above
// it. Waiting tasks keep their place in line. UpdatePolicy does not wait
// for running tasks.
//
// It returns an error wrapping ErrInvalidPolicy for a nil p. It returns the
// same for a p whose Isolation differs from the executor's, since the mode
// is fixed for its life. It returns ErrClosed once Shutdown or Close has
// begun. Concurrent calls are serialised.
func (e *GroupExecutor) UpdatePolicy(p *GroupPolicy) error {
	if !e.made() {
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
	e.global.SetDisplacing(p.displaces())
	c := e.groups.Update(p.globalInFlight, p.globalQueue, e.limits)
	e.globalTuning.Store(newTuning(p.adaptiveGlobal, "", p.globalInFlight, Unlimited))
	e.groups.SetIdleTTL(int64(p.idleTTL))
	e.applyChanges(c)
	e.pressureUpdated(p)
	return nil
}

// Submit hands task to e under groupKey and returns its handle at once. It
// never waits for a permit. It does run some code on the caller's goroutine.
// That is the listener's OnSubmitted, the resolvers of a new group and a
// backlog warning's function. Those must be quick, or Submit is slow.
//
// The task's context derives from ctx. Values flow to it, and ending ctx
// cancels the task, running or waiting. A task whose ctx is already done
// completes CANCELLED without running. So a ctx cancelled as soon as Submit
// returns cancels the task, as a defer cancel() of a context.WithTimeout
// does. Pass a context that lives as long as the task should.
//
// Submit returns an error wrapping ErrInvalidTask for an empty groupKey or
// taskID, a nil task or a nil ctx. It returns ErrClosed once Shutdown or
// Close has begun. A task turned away by a queue threshold is not an error
// here. Its handle reports the outcome the rejection policy gives it.
func Submit[T any](ctx context.Context, e *GroupExecutor, groupKey, taskID string, task Task[T]) (*TaskHandle[T], error) {
	if err := e.check(ctx); err != nil {
		return nil, err
	}
	if groupKey == "" || taskID == "" || task == nil { // checkTask says which
		return nil, checkTask("", groupKey, taskID, task == nil)
	}
	h, b := newHandle(e, task, 1)
	if err := e.admit(ctx, &h.t, b, groupKey, taskID, PriorityNormal, 1); err != nil {
		return nil, err
	}
	return h, nil
}

// ExecuteAll submits every task, waits for all of them and returns their
// results in input order. It does not stop at the first failure. Every task
// runs, and a task rejected under RejectAbort appears as a REJECTED result.
//
// Every task is validated first. If one is invalid, nothing is submitted,
// and the error (wrapping ErrInvalidTask) names its index. If ctx ends
// before every task has finished, the unfinished ones are cancelled and
// reported CANCELLED. The finished ones keep their result. A task has
// finished once its function (or rejection handler) has returned, even if
// its handle is not complete yet. ExecuteAll then returns all len(tasks)
// results with ctx.Err(). It does so whenever ctx has ended by the time it
// has every result, even just after the last task finished. The results
// then say that every task finished. If the executor closes part way, the
// tasks it did not accept are reported CANCELLED with Err ErrClosed.
// ExecuteAll then returns ErrClosed. A task whose group has a wrong chain
// of parents (see ParentResolver) is reported CANCELLED with the error
// Submit would return, wrapping ErrInvalidPolicy. The others go on, and
// ExecuteAll returns that error unless ctx ended.
func ExecuteAll[T any](ctx context.Context, e *GroupExecutor, tasks []GroupTask[T]) ([]GroupResult[T], error) {
	return ExecuteAllWith(ctx, e, tasks, SubmitOptions{})
}

// check reports misuse that Submit and ExecuteAll turn into errors.
func (e *GroupExecutor) check(ctx context.Context) error {
	switch {
	case !e.made():
		return errNilExecutor
	case ctx == nil:
		return errNilContext
	}
	return nil
}

// ShutdownGroup cancels every task of groupKey, with cause ErrGroupShutdown.
// Waiting tasks end CANCELLED, and running ones see their context
// cancelled. The waiting tasks' permits and queue slots are back when it
// returns. Their listener calls and handles follow at once, on goroutines
// of their own. Other groups are untouched. The group keeps its limits, and
// tasks submitted to it afterwards are accepted as usual. It does nothing
// for an unknown group and does not wait. A parent's subtree is shut down
// with it.
func (e *GroupExecutor) ShutdownGroup(groupKey string) {
	if !e.made() {
		return
	}
	if g, ok := e.groups.Lookup(groupKey); ok {
		e.endAllCancelled(e.groups.Shutdown(g, ErrGroupShutdown, nil))
	}
}

// EvictGroup cancels every task of groupKey, as ShutdownGroup does but with
// cause ErrGroupEvicted. It also forgets the group. Its limits are resolved
// again for the next task, and it is gone from Stats. Tasks still running on
// the evicted group's permits give them back to the old group, never to the
// new one. Until they return, the old and new group together may run more
// than the limit. A parent's subtree is evicted with it.
func (e *GroupExecutor) EvictGroup(groupKey string) {
	if !e.made() {
		return
	}
	e.endAllCancelled(e.groups.Evict(groupKey, ErrGroupEvicted, nil))
}

// Shutdown stops accepting tasks, so Submit returns ErrClosed. It waits
// until every accepted task, waiting or running, has finished. Then it waits
// until every call of a pressure warning function under way has returned.
// Then it returns nil. By then every goroutine of the executor has done its
// work, and no such function is called again.
//
// If ctx ends first, Shutdown cancels the remaining tasks, with cause
// ErrClosed. It returns ctx.Err() without waiting for them to return, nor
// for the functions. It may be called more than once, and concurrently with
// Close. A nil ctx is taken as context.Background().
//
// A group paused when Shutdown begins stays paused, as overrides are
// refused from then on. Its waiting tasks end only when ctx ends, which is
// never with context.Background(). Resume paused groups first, or give ctx
// a deadline.
//
// Do not let Shutdown wait in a task of e, in e's listener or rejection
// handler, or in a pressure warning function. It would wait for the call
// it is made from, which ends only after Shutdown returns. So it returns
// only when ctx ends, which is never with context.Background(). Start it on
// a goroutine of its own (go e.Shutdown(ctx)), or call Close. Shutdown
// cannot tell such a caller by its ctx, as a listener has none. Telling
// goroutines apart would need a walk of the stack on every call.
func (e *GroupExecutor) Shutdown(ctx context.Context) error {
	if !e.made() {
		return errNilExecutor
	}
	e.gate.close()
	e.blocking.wait()
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
	if !e.pressureDone(ctx.Done()) {
		e.cancelAll()
		return ctx.Err()
	}
	e.closeRoot(ErrClosed)
	// Every task has ended. The goroutines that ran them end next, without
	// running user code. So this wait is short and ctx does not bound it.
	e.crew.close()
	<-e.crew.done
	return nil
}

// Close stops accepting tasks and cancels every task, with cause ErrClosed.
// Waiting tasks end CANCELLED. Running functions see their context
// cancelled, and their goroutines end when they return. No pressure warning
// function is called once Close has returned. Close does not wait for a call
// under way, so such a function may call it. Close is idempotent and returns
// nil. On a nil or zero executor it returns an error matching ErrClosed. Use
// Shutdown to wait for tasks and for the functions.
func (e *GroupExecutor) Close() error {
	if !e.made() {
		return errNilExecutor
	}
	e.gate.close()
	e.blocking.wait()
	e.stopPressure()
	e.cancelAll()
	return nil
}

// cancelAll cancels every task, with cause ErrClosed, and ends the waiting
// ones. The cancel reaches every group scope before closeRoot returns, so
// the sweep after it finds, or is followed by, scopes already done.
func (e *GroupExecutor) cancelAll() {
	e.closeRoot(ErrClosed)
	e.endAllCancelled(e.groups.SweepAll(nil))
}

// Policy returns the policy in force, which is New's or the last
// UpdatePolicy's. A nil or zero executor has none, so Policy returns nil.
func (e *GroupExecutor) Policy() *GroupPolicy {
	if !e.made() {
		return nil
	}
	return e.policy.Load()
}

// made reports whether New made e. A nil or zero executor acts as one
// closed from the start (see GroupExecutor).
func (e *GroupExecutor) made() bool { return e != nil && e.groups != nil }
