package groupconc

// The scheduler moves a task from Submit to its end. Each state below has
// one owner. Only the owner may drive the task on from there. It may walk
// the task through its layers, give back its permits, or end it.
//
//	state     where the task is             owner                        leaves to
//	--------  ----------------------------  ---------------------------  ----------------------------------
//	blocked   a queue's line of callers     the line                     admitted (a slot handed, or a
//	          (SubmitWith with Block; not                                nudge), or gone (the wait ended:
//	          accepted yet, see blocking.go)                             nothing was submitted)
//	admitted  inside Submit (admit)         the submitting goroutine     waiting, ready, ended
//	waiting   a groupstate line, as a       the line                     carried (a releaser's Handed),
//	          record (no goroutine)                                      turn, paused, leaving (Leave, a sweep)
//	paused    its paused group's pause      the pause line               carried, waiting or leaving (Unpark
//	          line, holding no permit       (groupstate/pause.go)        as the group resumes: walkResumed)
//	turn      handed a permit, out of line, its group's turns            carried (the Resume of the task
//	          behind another's walk on      (groupstate/turn.go)         ahead of it hands it on)
//	carried   carryOn, just handed a permit the goroutine that took it   running, waiting, ended
//	ready     the ready queue (readyq)      the queue                    running (a worker's Take),
//	                                                                     leaving (Cancel, see leaveReady)
//	leaving   out of its line, cancelled    endCancelled's goroutine     ended
//	displaced out of its line, its queue    endDisplaced's goroutine     ended
//	          slot taken by a newcomer
//	running   a worker (work → runOne),     that worker                  ended
//	          in its function or handler
//	ended     nowhere: permits given back,  nobody; its handle keeps     —
//	          context closed, gate left     the result
//
// A blocked caller handed a slot holds that queue's door while its task is
// admitted. The queue hands its next slot only once the task has its place
// (waiting, ready, or ended). So callers served together are accepted in the
// order they were served (see blocking.go).
//
// UpdatePolicy moves waiting tasks too. A raised limit hands them permits,
// and each goes on as carried, on a goroutine of its own. A lowered limit
// takes the tasks holding an over-limit layer's permit out of the later
// lines. It puts them back at the head of that layer's line, waiting again.
// In between, the updating goroutine owns them, and then checks them for a
// cancel that came meanwhile. Under IsolationFairShare the global line is
// the fair one (groupstate's fairQueue). Ownership is the same.
//
// Every task ends through end, once, on its owner's goroutine. Its handle is
// completed on the side, by whoever claims it first. That is complete (the
// owner, with the task's outcome) or cancel (Cancel, from any goroutine).
// Cancel never drives the task. It cancels its context and makes it leave
// its line or the ready queue. Then it gives back the permits of a task it
// took out, which was never to run, before the handle completes. A
// listener is told after the permits' hand-off is decided, on the owner's
// goroutine, so it never changes where permits go.
//
// Comments that begin "Interleaving:" mark code whose correctness rests on
// an argument about concurrent goroutines. Change such code only with the
// argument.

import (
	"context"
	"slices"

	"github.com/kobe/groupconc/internal/groupstate"
)

// handOff says what becomes of the tasks a task's given-back permits went to.
type handOff uint8

const (
	// handOffInline carries them on here. One that can run is returned to
	// run next on this goroutine, which is free to run it.
	handOffInline handOff = iota + 1
	// handOffSpawn gives each a goroutine of its own, because this goroutine
	// is not free. It may be a Submit caller, a handler to run, or a
	// runtime.Goexit unwinding.
	handOffSpawn
	// handOffKeep leaves them in the task's permits, for the caller to adopt.
	handOffKeep
)

// step is where carryOn leaves a task.
type step uint8

const (
	stepRun     step = iota + 1 // it holds every permit, or runs as a rejected task
	stepWaiting                 // it waits in its next line, which owns it
	stepEnded                   // it ended; its permits' hand-offs are left in it
)

// listener returns the listener of the policy in force.
func (e *GroupExecutor) listener() TaskLifecycleListener { return e.policy.Load().listener }

// join counts t into its group, with b, id and ctx. It returns ErrClosed
// once Shutdown or Close has begun, and an error for a chain of parents
// the policy refuses. Then nothing was accepted.
func (e *GroupExecutor) join(ctx context.Context, t *task, b body, key, id string) (*groupstate.Group[task], error) {
	if e.gate.closed.Load() {
		return nil, ErrClosed
	}
	e.groups.ForgetIdle()
	t.body, t.id, t.caller = b, id, ctx
	return e.groups.Enter(key, &t.permits, t, e.clock())
}

// admit accepts t into its group and sets it going. It does not block. The
// layers are tried at once, on the caller's goroutine. So a task that can
// start, and a task that must be rejected, is known before Submit returns.
func (e *GroupExecutor) admit(ctx context.Context, t *task, b body, key, id string, prio Priority, cost int) error {
	g, err := e.enter(ctx, t, b, key, id)
	if err != nil {
		return err
	}
	e.extend(t, cost)
	if prio != PriorityNormal {
		t.permits.SetPriority(prio.rank())
	}
	return e.accepted(t, g, "")
}

// enter counts t into its group and into the gate, with no walk. It returns
// ErrClosed once Shutdown or Close has begun, and makes no group then. A
// Do inside a task goes no further (doInside).
func (e *GroupExecutor) enter(ctx context.Context, t *task, b body, key, id string) (*groupstate.Group[task], error) {
	g, err := e.join(ctx, t, b, key, id)
	if err != nil {
		return nil, err
	}
	// After this, Shutdown waits for t. No task is accepted after the drain
	// started, because enter fails once Shutdown or Close has begun.
	if !e.gate.enter(t) {
		t.permits.Exit()
		return nil, ErrClosed
	}
	return g, nil
}

// accepted sets going t, which was accepted into group g and is counted by
// the gate. It holds what a paused walk may have taken (see admitBlocking).
// A task given a reason is turned away for it.
func (e *GroupExecutor) accepted(t *task, g *groupstate.Group[task], reason string) error {
	owned := true // until t is handed to a line or the ready queue
	defer func() {
		if owned {
			e.end(t, handOffSpawn, noTime)
		}
	}()
	t.tell(e.listener(), notifySubmitted)
	if t.context().Err() != nil {
		e.finishCancelled(t)
		return nil
	}
	out := groupstate.Rejected
	if reason == "" {
		// A blocked caller's task handed a slot holds its queue's door until
		// it has its place, in its line or in the ready queue. Only then is
		// the next blocked caller handed a slot (see admitBlocking).
		door := t.permits.TakeDoor()
		out, reason = t.permits.Try()
		if out == groupstate.Admitted {
			owned = false
			e.launch(t)
		}
		door.Pass()
	}
	switch out {
	case groupstate.MustWait:
		owned = false
		e.waiting(t)
		if reason != groupstate.Parked {
			e.repark(g)
		}
		e.pressureWaiting(g) // last: its fn may not return (runtime.Goexit)
	case groupstate.Rejected:
		if e.turnAway(t, reason) {
			owned = false
			e.launch(t)
		} // else completed REJECTED: no goroutine needed
	}
	return nil
}

// waiting follows up on a task that Submit left in a line, which owns it
// now. It watches the caller's context, whose end takes the task out of
// line. It takes the task out itself if it was cancelled as it joined.
func (e *GroupExecutor) waiting(t *task) {
	if t.caller.Done() != nil {
		t.context().watch(func() { e.callerEnded(t) })
	}
	if e.stopRequested(t) && t.permits.Leave() {
		defer e.end(t, handOffSpawn, noTime)
		e.finishCancelled(t)
	}
}

// callerEnded takes t out of its line, and ends it, when its caller's
// context ends while it waits. It runs on a goroutine of its own, which
// context.AfterFunc starts. The crew counts it while it ends t, since t has
// not left the gate yet.
func (e *GroupExecutor) callerEnded(t *task) {
	if t.permits.Leave() {
		e.crew.add()
		e.endCancelled(t)
	}
}

// stopRequested reports whether a waiting task should leave its line. That
// is so if it was cancelled by its handle, by its caller's context or by its
// group scope (ShutdownGroup, EvictGroup, and Close through the executor's
// context).
//
// Interleaving: each of those first records why and then makes the task
// leave. Close sweeps the lines once the cancel has reached every scope. A
// task that was between two lines at that moment is in none. It finds out
// here, after joining the next. So the task's context is done when it ends.
func (e *GroupExecutor) stopRequested(t *task) bool {
	return t.claimed() || t.caller.Err() != nil || t.permits.Scope().Err() != nil
}

// carryOn walks t, just handed a permit, through its remaining layers. It
// returns where that leaves it. If t is to run, it also returns the time t
// got its last permit, as an offset from its Submitted. Now is the clock
// when the permit was given back, if known (>= 0). So a task handed its
// permits by a task that ended starts at that task's End. W2 of the
// benchmarks module reads the clock once less per task because of this.
// It also returns a task of t's group whose turn came, for the caller to
// carry on (see Permits.Resume).
func (e *GroupExecutor) carryOn(t *task, now int64) (step, int64, *task) {
	out, reason, next, moved := t.permits.Resume()
	switch out {
	case groupstate.Admitted:
		if now < 0 {
			return stepRun, t.since(), next
		}
		return stepRun, max(now-t.permits.Submitted(), 0), next
	case groupstate.MustWait:
		s := stepWaiting
		if e.leftWaiting(t, reason) {
			e.finishCancelled(t)
			e.end(t, handOffKeep, noTime)
			s = stepEnded
		}
		if moved != nil { // sent back to a line by a lowered limit
			e.applyChanges(moved)
		}
		return s, 0, next
	}
	if e.turnAway(t, reason) {
		return stepRun, 0, next
	}
	e.end(t, handOffKeep, noTime)
	return stepEnded, 0, next
}

// handOn carries on with the tasks that p's releases handed a permit to, as
// how says. Inline, it walks each through its remaining layers. It returns
// one that can run, with the time it got its last permit, for this goroutine
// to run next. It starts no goroutine for that one. W2 and W4 of the
// benchmarks module measure this, since most of their tasks are handed a
// permit. The others that can run get goroutines of their own.
func (e *GroupExecutor) handOn(p *groupstate.Permits[task], how handOff, now int64) (next *task, start int64) {
	switch how {
	case handOffKeep:
		return nil, 0
	case handOffSpawn:
		e.goHandOn(p)
		return nil, 0
	}
	// A task whose group's turn comes as another's walk stops walks on in
	// its place among the others, in the order their lines serve them. So
	// where they go on to one line (a parent's), they reach it in order.
	var buf [4]*task
	turns := buf[:0]
	for c := p.Handed(); c != nil || len(turns) > 0; {
		t := c
		if len(turns) > 0 && (c == nil || groupstate.CompareServed(turns[0], c) < 0) {
			t, turns = turns[0], turns[1:]
		} else {
			c = nil
		}
		s, at, turn := e.carryOn(t, now)
		switch {
		case s == stepEnded:
			p.Adopt(&t.permits) // t's releases handed permits on too
		case s == stepRun && t.inline():
			t.body.wake(true, at) // its caller runs it
		case s == stepRun && next == nil:
			next, start = t, at
		case s == stepRun:
			e.goCarry(t, at)
		}
		if turn != nil {
			turns = insertServed(turns, turn)
		}
		if c == nil {
			c = p.Handed()
		}
	}
	return next, start
}

// insertServed puts t in its place in ts, which is in the order lines
// serve tasks (groupstate.CompareServed).
func insertServed(ts []*task, t *task) []*task {
	i, _ := slices.BinarySearchFunc(ts, t, groupstate.CompareServed[task])
	return slices.Insert(ts, i, t)
}

// cancelledBeforeRun reports whether t, holding every permit, has been
// cancelled. If so, it waits until its context is done.
//
// Interleaving: ShutdownGroup, EvictGroup and Close cancel a scope whose
// error is set at once. But its child contexts are cancelled one by one. The
// caller's cancel reaches the task's context through context.AfterFunc, on
// another goroutine. Meanwhile a task whose own context has not been reached
// yet may get a permit freed by a sibling that did react. So the caller's
// context and the scope are asked too. The scope answers for the executor,
// its root (Close). The task's context is waited for, since its cancel is on
// the way, so that its error is set when the result is written.
func (e *GroupExecutor) cancelledBeforeRun(t *task) bool {
	c := t.context()
	if c.Err() == nil && (!c.built() || c.caller.Err() == nil && c.permits.Scope().Err() == nil) {
		return false
	}
	<-c.Done()
	return true
}
