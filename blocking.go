package groupconc

import (
	"context"
	"errors"
	"time"

	"github.com/kobe/groupconc/internal/groupstate"
)

// Blocking submissions. A caller of SubmitWith with Block whose task finds
// its queue full waits until a slot is handed to it. It waits as a record in
// that queue's line of waiting callers (groupstate's slots). Until then its
// task is not accepted. The gate has not counted it, no listener has heard
// of it, and it is in no count but Blocked.
//
// A queue hands its slots to one caller at a time, with its door. The caller
// accepts its task on its own goroutine, as Submit would, and the listener
// hears of it there. It passes the door on once the task has its place (see
// accepted). Callers may be handed slots together, by a raised threshold or
// by tasks ending together. They are still accepted, announced and started
// in the order the queue served them. The callers still waiting behind a
// door can give up as always.

// errWaitTimeout ends a wait that ran past MaxWait.
var errWaitTimeout = errors.New("groupconc: wait timed out")

// errCallerDone is waitSlot's word that ctx ended. The caller reads
// ctx.Err() once it has let go of all it held, since a caller's context
// may panic there too.
var errCallerDone = errors.New("groupconc: the caller's context ended")

// expired stands for a MaxWait timer that has fired.
var expired = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// execKey{e} is the context key under which the context of a task of e
// that has not ended answers with e (see taskContext.Value). The key names
// the executor, so a task of another executor in between, whose context
// derives from one of e's tasks, does not hide that task.
type execKey struct{ e *GroupExecutor }

// heldKey{e} asks as execKey{e} does, but only a task that holds permits of
// its own answers (see holdsPermits). For another, its caller's context is
// asked instead. Both keys are one pointer, so asking allocates nothing.
type heldKey struct{ e *GroupExecutor }

// submit is SubmitWith's admission, and ExecuteAllWith's.
func (e *GroupExecutor) submit(ctx context.Context, t *task, b body, key, id string, o SubmitOptions) error {
	if o.Block && !e.insideTask(ctx) {
		return e.admitBlocking(ctx, t, b, key, id, o)
	}
	return e.admit(ctx, t, b, key, id, o.Priority, o.Cost)
}

// insideTask reports whether ctx is, or derives from, the context of a task
// of e that has not ended. Such a caller may hold the permits it would wait
// for, so it never blocks.
func (e *GroupExecutor) insideTask(ctx context.Context) bool {
	x, _ := ctx.Value(execKey{e}).(*GroupExecutor)
	return x == e
}

// holdsPermits reports whether ctx is, or derives from, the context of a
// task of e that runs holding permits of its own. A Do there runs under
// them. A task turned away holds none. Its handler, or its function run
// under RejectCallerRuns, has no permits to lend. Nor has a Do inside a
// task, which borrows its caller's only while the caller runs. So a Do
// made with such a context asks the context the task was given. Unless
// that one is a running task's, the Do waits as any Do.
func (e *GroupExecutor) holdsPermits(ctx context.Context) bool {
	x, _ := ctx.Value(heldKey{e}).(*GroupExecutor)
	return x == e
}

// ownsPermits reports whether t runs, or may run, holding permits of its
// own: it was not turned away, and it is not a Do inside a task.
func (t *task) ownsPermits() bool {
	return t.reason() == "" && !(t.inline() && t.body.borrows())
}

// admitBlocking admits t as admit does, but when its queue is full the
// caller waits for a slot. See SubmitWith for what ends the wait. The walk
// is paused before t would join a line. So t is accepted (counted, announced
// to the listener) before any line, and so another goroutine, can own it.
func (e *GroupExecutor) admitBlocking(ctx context.Context, t *task, b body, key, id string, o SubmitOptions) error {
	g, err := e.join(ctx, t, b, key, id)
	if err != nil {
		return err
	}
	e.extend(t, o.Cost)
	p := &t.permits
	p.SetPriority(o.Priority.rank())
	p.Pause(true)
	var timeout <-chan time.Time
	var watch groupstate.Watch[task]
	watching := false
	reason := ""
	waited := false
	for {
		group, global := p.Nudges()
		out, why := p.Try()
		if out != groupstate.Rejected {
			break
		}
		// The walk gave back what it held, so carry on whoever it went to.
		e.handOn(p, handOffSpawn, noTime)
		if !waited {
			// Shutdown and Close return once every caller counted here
			// has given up or knows its task is accepted. One that is
			// counted after Close's wait finds the gate closing at once.
			waited = true
			e.blocking.add()
			if o.MaxWait > 0 {
				tm := time.NewTimer(o.MaxWait)
				defer tm.Stop()
				timeout = tm.C
			}
		}
		if !watching && why == ReasonGroupQueueFull {
			if watch, watching = p.WatchGlobal(); watching {
				continue // walk again, watched (see WatchGlobal)
			}
		}
		seen := group
		if why == ReasonGlobalQueueFull {
			seen = global
		}
		err := e.waitSlot(ctx, t, why, seen, &timeout)
		if err == errWaitTimeout {
			reason = ReasonWaitTimeout
			break
		}
		if err != nil {
			watch.Stop()
			e.blocking.done()
			p.Exit()
			if err == errCallerDone {
				err = ctx.Err()
			}
			return err
		}
	}
	watch.Stop()
	if waited {
		// No user code runs from here until the gate decides, so Close
		// need not wait for a listener (which might call Close).
		e.blocking.done()
	}
	p.Pause(false)
	if !e.gate.enter(t) {
		e.giveBack(p)
		p.Exit()
		return ErrClosed
	}
	if waited {
		p.Restamp(e.clock()) // accepted now: it waits, if it must, from now
	}
	return e.accepted(t, g, reason)
}

// waitSlot waits after a walk found the queue named by reason full. It waits
// until a slot of that queue is handed to t, and then returns nil, with t
// holding the slot and the queue's door. For a queue of no slots, it waits
// instead until a permit t may start on is given back. Then it returns nil,
// t holds no slot, and t walks again. The wait also ends when ctx ends
// (errCallerDone), timeout fires (errWaitTimeout), the executor closes
// (ErrClosed), or t's group is shut down or evicted (the scope's cause).
// Then t holds nothing. The seen argument is the queue's nudge count before
// the walk (see Block).
func (e *GroupExecutor) waitSlot(ctx context.Context, t *task, reason string, seen uint64, timeout *<-chan time.Time) error {
	p := &t.permits
	a := t.getAside()
	woken := make(chan struct{})
	a.woken = woken // before the line has t: the waker reads it after
	defer p.Unblock()
	if !p.Block(reason, seen) {
		return nil
	}
	var err error
	select {
	case <-woken:
		if p.Scope().Err() == nil {
			return nil
		}
		// ShutdownGroup and EvictGroup cancel the scope, then end the
		// waiting tasks, whose slots may come here before the cancel is
		// seen. The end still wins: the caller gets its cause, not a
		// task cancelled at once.
		e.giveBack(p)
		return context.Cause(p.Scope())
	case <-ctx.Done():
		err = errCallerDone
	case <-*timeout:
		// The timer fires once. A wait after this one, if the caller
		// got its slot in time but must wait again, ends at once.
		*timeout = expired
		err = errWaitTimeout
	case <-e.gate.closing:
		err = ErrClosed
	case <-p.Scope().Done():
		err = context.Cause(p.Scope())
	}
	if !p.Leave() {
		// A slot was handed to t as the wait ended, or it was nudged.
		// ShutdownGroup, EvictGroup and Close free slots as they end the
		// waiting tasks. So the end still wins, except for MaxWait. Giving
		// the slot back passes the queue's door on with it.
		<-woken
		if err == errWaitTimeout && p.Holds() {
			return nil // it ended in time after all
		}
		e.giveBack(p)
	}
	return err
}

// giveBack gives back what p holds, for a caller that is not to run its task
// (yet). It carries on the tasks its permits went to, each on a goroutine of
// its own.
func (e *GroupExecutor) giveBack(p *groupstate.Permits[task]) {
	p.Release()
	e.handOn(p, handOffSpawn, noTime)
}

// wake is how groupstate hands a slot to a waiting caller.
func wake(t *task) { close(t.aside.Load().woken) }
