package groupconc

import (
	"math"
	"sync"

	"github.com/kobe/groupconc/internal/groupstate"
)

// A change of limits (UpdatePolicy, an override, an adaptive limit) moves
// waiting tasks in groupstate, under the update lock. Changes lists them.
// applyChanges carries them on, as the scheduler (scheduler.go) does.

// applyChanges carries on the tasks a change of limits moved. It may run
// under the updating mutex, so it calls no user code: a listener may call
// UpdatePolicy. So every task it ends ends on a goroutine of its own.
func (e *GroupExecutor) applyChanges(c *groupstate.Changes[task]) {
	// A task put back in line was in none for a moment. A cancel then could
	// not take it out, so it is checked here, as after any join.
	for _, t := range c.Requeued {
		if e.stopRequested(t) && t.permits.Leave() {
			e.goEndCancelled(t)
		}
	}
	// The tasks the raised limits let through were handed a permit away from
	// the executor's goroutines. They walk on here, one after another in
	// the order their lines serve them, so that where two go on to one
	// free permit, or to one line (a parent's), the first gets there
	// first. A task handed one while another of its group walked on gets
	// its group's turn as that walk stops: it takes its place in the
	// order. Each runs on a goroutine of its own.
	todo := c.Handed
	for len(todo) > 0 {
		t := todo[0]
		todo = todo[1:]
		if turn := e.walkResumed(t); turn != nil {
			todo = insertServed(todo, turn)
		}
	}
	for _, g := range c.Resumed {
		e.drain(g)
	}
}

// drain walks on the tasks of resumed group g's pause line, one after
// another, so that they join their next lines in their order. New tasks of
// g wait in the line behind them until it is empty (groupstate's
// pause.go). The caller walks those the line held as it started. The rest,
// submitted meanwhile, are walked on a goroutine, so that a stream of
// them does not hold the caller.
func (e *GroupExecutor) drain(g *groupstate.Group[task]) {
	n := g.StartDrain()
	if n == 0 || !e.walkParked(g, n) || !e.crew.join() {
		return // empty, or drained by another, or done
	}
	go func() {
		defer e.crew.exit()
		e.walkParked(g, -1)
	}()
}

// walkParked walks on up to n tasks of g's pause line (every one, for
// n < 0), and reports whether g is still to be drained.
func (e *GroupExecutor) walkParked(g *groupstate.Group[task], n int) bool {
	for ; n != 0; n-- {
		t := g.Unpark()
		if t == nil {
			return false
		}
		if turn := e.walkResumed(t); turn != nil {
			e.goResume(turn)
		}
	}
	return true
}

// walkResumed walks on t, handed a permit by a change of limits or taken
// out of a resumed group's pause line. As in carryOn, but a task that ends
// goes to a goroutine, since ending it tells the listener, and a change
// is carried on under the update lock. It returns the task of t's group
// whose turn to walk on came as t's walk stopped, for the caller to walk
// on.
func (e *GroupExecutor) walkResumed(t *task) (turn *task) {
	out, reason, turn, moved := t.permits.Resume()
	if moved != nil { // sent back to a line by a lowered limit
		defer e.applyChanges(moved)
	}
	switch {
	case out == groupstate.Admitted:
		e.goCarry(t, t.since())
	case out == groupstate.Rejected:
		e.goTurnAway(t, reason)
	case e.leftWaiting(t, reason):
		e.goEndCancelled(t) // cancelled as it walked
	}
	return turn
}

// leftWaiting follows up on t, which Resume left waiting, with reason. It
// reports whether t left its line, cancelled as it walked, for the caller
// to end it. Otherwise t waits on, and is moved to a pause line if its
// group was paused as it walked (repark).
func (e *GroupExecutor) leftWaiting(t *task, reason string) bool {
	if e.stopRequested(t) && t.permits.Leave() {
		return true
	}
	if reason != groupstate.Parked {
		e.repark(t.permits.Group())
	}
	return false
}

// repark follows up on a task of group g that Try or Resume left waiting
// in a layer's line (not Parked). If g is paused now, the task may have
// joined that line after the change that paused g moved the others to the
// pause line. It is moved there too (groupstate.Registry.Repark), on a
// goroutine of its own: the update lock may be held by a guard that
// submits. One such goroutine at a time is due per paused group. It moves
// every task that joined before it began, so a stream of tasks under a
// pause does not start a goroutine each.
func (e *GroupExecutor) repark(g *groupstate.Group[task]) {
	a := g.PausedBy()
	if a == nil || !e.reparks.add(a) {
		return
	}
	if !e.crew.join() {
		e.reparks.begin(a)
		return
	}
	go func() {
		defer e.crew.exit()
		e.updating.Lock()
		defer e.updating.Unlock()
		e.reparks.begin(a) // a task that joins after this is due another
		e.applyChanges(e.groups.Repark(a))
	}()
}

// reparks are the paused groups a repark is due for and has not begun.
type reparks struct {
	mu  sync.Mutex
	due map[*groupstate.Group[task]]bool
}

// add makes a due, and reports whether it was not due yet.
func (r *reparks) add(a *groupstate.Group[task]) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.due[a] {
		return false
	}
	if r.due == nil {
		r.due = make(map[*groupstate.Group[task]]bool)
	}
	r.due[a] = true
	return true
}

// begin takes a off the groups due, as its repark begins.
func (r *reparks) begin(a *groupstate.Group[task]) {
	r.mu.Lock()
	delete(r.due, a)
	r.mu.Unlock()
}

// limits resolves groupKey's limits, the policy's and then the override's.
// The registry calls it when it creates a group, and when UpdatePolicy or
// SetGroupOverride resolve groups again.
func (e *GroupExecutor) limits(groupKey string) groupstate.Limits {
	return e.limitsOver(groupKey, nil, 0)
}

// limitsOver is limits, for a group whose adaptive limit, if any, was at
// conc under state: a change of its override that leaves the adaptive
// limit's bounds as they were carries it on there (see tuning.carry).
func (e *GroupExecutor) limitsOver(groupKey string, state any, conc int) groupstate.Limits {
	p := e.policy.Load()
	l := p.limits(groupKey)
	if e.overrides.n.Load() > 0 {
		if o, ok := e.overrides.get(e.groups, groupKey); ok {
			o.apply(&l)
		}
	}
	if tu, ok := state.(*tuning); !ok || !tu.carry(&l, conc) {
		p.tuneLimits(&l, groupKey) // an adaptive limit moves below what is resolved, override included
	}
	return l
}

// carry carries tu on in l, limits resolved again after a change of an
// override, with its limit at conc. It does so, and reports true, when l
// resolves to tu's bounds: a pause, a resume or a queue threshold starts
// no algorithm afresh. tu stays the group's tuning, so that the samples of
// tasks running now still move the limit. A new queue threshold becomes
// its bound. No Tune runs meanwhile (see Registry.UpdateGroup).
func (tu *tuning) carry(l *groupstate.Limits, conc int) bool {
	if l.Concurrency != tu.max {
		return false
	}
	tu.queueMax.Store(int64(l.QueueThreshold))
	l.Tuning, l.Concurrency = tu, conc
	l.QueueThreshold = tu.queue(conc)
	return true
}

// queue returns the queue threshold that goes with the limit n.
func (tu *tuning) queue(n int) int {
	most := int(tu.queueMax.Load())
	if tu.factor == 0 {
		return most
	}
	if q := math.Ceil(tu.factor * float64(n)); q < float64(most) {
		return int(q)
	}
	return most
}
