package groupstate

import (
	"context"
	"sync/atomic"
	"unsafe"
)

// Outcome is the state a task reaches in its walk through the layers.
type Outcome uint8

const (
	Admitted  Outcome = iota + 1 // the task holds every permit
	MustWait                     // the task holds a queue slot and a place in line; the line owns it now
	Rejected                     // no queue slot; the task holds nothing
	WouldWait                    // paused (see Pause): the task holds a queue slot and is to join a line
)

// Parked is the reason Try and Resume give with MustWait when the walk
// stopped in a pause line, where a pause on its path holds it back. No
// Repark is due for it. Whoever takes it out from there walks it on.
const Parked = "parked"

// Bits of Permits.held.
const (
	heldGlobal     uint8 = 1 << iota // the global permit
	heldGlobalSlot                   // a place in the global queue
	heldBulkhead                     // the group's bulkhead permit
	heldGroupSlot                    // a place in the group queue, kept until every permit is held
	heldConc                         // the group's concurrency permit
	countedWaiting                   // among the group's waiting tasks
	countedRunning                   // in the global running count
	countedHanded                    // in its group's fairGroup.handed (see kidQueue.pop)
)

// Permits is what one task holds, and its place in line while it waits.
//
// A Permits has one owner at a time, and only the owner may call its
// methods. Leave, Key and Scope are the exceptions, and anyone may call
// them. The goroutine that entered it (Registry.Enter) owns it until Try or
// Resume returns MustWait. The task is then in a line, and the line owns
// it. Three kinds of caller take it out again and own it from then on.
// One is whoever releases the permit it waits for. Handed returns the task
// to that releaser, which calls Resume. But while another task of its
// group walks on from a hand-off, it waits for its turn, in no line. So
// may a task in Try. It then goes to the owner of that task, from its
// Resume (see turn.go).
// Another is whoever raises a limit
// (Registry.Update). The last is whoever makes it leave (Leave, sweeps).
// That takes a fresh walk from its wait for its turn too.
//
// A waiting task is its Permits, linked into a line's queue. Its zero value
// is in no line. The record is all a deep backlog holds per task, so it is
// kept to 72 bytes (TestPermitsLayout). So the task is found from it, not
// stored in it (task). And the prev link heads the chain of tasks its
// releases handed a permit to, since the link is unused while it is in no
// line.
type Permits[T any] struct {
	group     *Group[T]               // and through it the global layer; never changes after init
	scope     *scope                  // never changes after init
	submitted int64                   // the task's Submit time, on the registry's clock
	line      atomic.Pointer[line[T]] // the line the task waits in, if any
	links[T]                          // in its line's queue, guarded by the line's mu; out of line, see Handed
	chained   links[T]                // in its group's chain (Group.chain), guarded by the global line's mu
	seq       uint32                  // when it joined the fair queue, guarded by the global line's mu; under IsolationOff, its ticket (see waited)
	bit       uint8                   // the layer it waits for; set before joining
	prio      uint8                   // 0 is the highest; set before the task first joins a line
	held      uint8                   // bits above
	flags     uint8                   // see room.go
}

// init ties p to the layers of group g and to the task that owns it. It
// fixes the group scope the task belongs to (see Registry.Enter).
func (p *Permits[T]) init(g *Group[T], owner *T, submitted int64) {
	if unsafe.Pointer(owner) != unsafe.Pointer(p) {
		panic("groupstate: a task's Permits must be its first field")
	}
	p.group, p.held, p.submitted, p.flags = g, 0, submitted, countedFlag
	p.scope = g.scope.Load()
	p.prio = PriorityDefault
}

// Next returns the task after p's in a list of the caller's, or nil. Such a
// list is a queue of tasks holding every permit. SetNext sets the link.
// Such a task waits in no line. So the list goes through the link of its
// group's chain, which only a task waiting in the global line uses. Unlink
// it (SetNext nil) before it could wait again.
func (p *Permits[T]) Next() *T {
	if n := p.chained.next; n != nil {
		return n.task()
	}
	return nil
}

// SetNext sets the task after p's in the caller's list. See Next.
func (p *Permits[T]) SetNext(t *T) { p.chained.next = permitsOf(t) }

// permitsOf returns the Permits of task t, its first field.
func permitsOf[T any](t *T) *Permits[T] { return (*Permits[T])(unsafe.Pointer(t)) }

// task returns the task p belongs to, whose first field it is.
func (p *Permits[T]) task() *T { return (*T)(unsafe.Pointer(p)) }

// Submitted returns the task's Submit time given to Registry.Enter.
func (p *Permits[T]) Submitted() int64 { return p.submitted }

// Key returns the key of the task's group. It is safe from any goroutine,
// as Scope is. Neither reads anything that changes after Registry.Enter.
func (p *Permits[T]) Key() string { return p.group.key }

// Scope returns the context of the group scope the task was submitted in.
// It is cancelled, with the cause given, by the group's Shutdown and by the
// registry's Evict. It is safe from any goroutine.
func (p *Permits[T]) Scope() context.Context { return p.scope }

// Owner returns the Owner of the task's registry. It is safe from any
// goroutine.
func (p *Permits[T]) Owner() any { return p.group.reg.Owner }

// Try walks the layers without blocking. It returns Admitted, MustWait or
// Rejected with the reason (with MustWait, "" or Parked). On MustWait the
// task holds a queue slot and a place in line at the layer it must wait
// at, or in a pause line, and belongs to that line now. Or it waits for
// its group's turn, in no line (see turn.go).
// A rejected task may have released permits that others waited for. See
// Handed.
func (p *Permits[T]) Try() (Outcome, string) { return p.advance(true, nil) }

// Resume carries on the walk of a task taken out of its line holding the
// permit it waited for. It returns as Try does. It may also return next,
// a task of the same group handed a permit meanwhile, whose turn to walk
// on comes as this walk stops (see turn.go). The caller owns next, and
// must call its Resume. A walk sent back to a line by a limit lowered
// while it was handed on (see sendBack) returns MustWait and moved, the
// changes that made. The caller owns them, as those of a change of limits.
func (p *Permits[T]) Resume() (out Outcome, reason string, next *T, moved *Changes[T]) {
	g, turn := p.group, p.bit != pauseBit // a resumed group's task was handed no permit
	p.flags |= granted
	out, reason = p.advance(!turn, &moved)
	if turn { // p may be in a line now: only g is read
		if w := g.passTurn(); w != nil {
			next = w.task()
		} else {
			g.nudgeTurn()
		}
	}
	return out, reason, next, moved
}

// Leave takes the task out of the line it waits in and reports whether it
// did so. If so, the caller owns the task. The task holds no permit of that
// line, but it may hold permits of earlier layers, so Release them. A
// fresh walk waiting for its group's turn leaves that wait too (leaveTurn).
// Leave reports false if the task is in no line, nor such a wait. It is
// safe from any goroutine.
func (p *Permits[T]) Leave() bool { return p.leave() }

// Exit counts the task out of its group, once it is over. An idle group may
// then be forgotten. Call it once, after Release.
func (p *Permits[T]) Exit() {
	if p.flags&countedFlag != 0 {
		p.flags &^= countedFlag
		p.group.exit()
	}
}

// advance takes the layers without blocking, in the order of walks.
// A layer is first tried as is. Only a task that has to wait takes a queue
// slot and joins the layer's line, and the walk stops there. A group's
// layer is followed by the same layer of each ancestor, nearest first. So
// a task holds its own group's permit before it waits for its parent's,
// and a subtree's waiting tasks never hold its capacity. A fresh walk,
// one that does not have its group's turn, waits for it while another
// task of its group walks on from a hand-off (see turn.go). A walk sent
// back to a line (sendBack) leaves its changes in moved.
func (p *Permits[T]) advance(fresh bool, moved **Changes[T]) (Outcome, string) {
	if p.held&countedRunning != 0 { // admitted already, by a paused walk
		return Admitted, ""
	}
	g, gl := p.group, p.group.global
	if p.held|p.flags&(granted|extended) == 0 && !gl.fair && g.paused.Load() == 0 && p.takeAll(g, gl) {
		return Admitted, ""
	}
	x, depth := p.x(), uint8(0)
	if x != nil {
		x.above = 0       // until an ancestor's queue turns this walk away
		depth = g.depth() // a plain task's group has no parent (NeedsExt)
	}
	if out := p.gate(); out == MustWait {
		return MustWait, Parked // a line may own p by now
	} else if out != Admitted {
		return p.stop(out, pauseBit, ReasonGroupQueueFull)
	}
	// A walk handed a permit mostly finds the rest free (takeRest). A goto
	// past the loop, rather than a call of it, kept W2 flat as it was.
	// A walk handed a permit mid-walk after a change of limits (handedMid)
	// takes the loop, which checks it (sendBack). One whose turn came is
	// checked before it walks on.
	mid := p.handedMid(gl, depth)
	if p.turnCame(gl, fresh) {
		if *moved = p.sendBack(gl, depth); *moved != nil {
			return MustWait, ""
		}
	}
	if !gl.fair && !mid && x.costsOne() && p.flags&granted != 0 && p.takeRest(g, gl, x, depth) {
		goto admitted
	}
	for i := range gl.walk {
		y := &gl.walk[i]
		for lv := uint8(0); lv <= y.top(depth); lv++ {
			h, a := &p.held, g
			if lv > 0 {
				h, a = &x.anc[lv-1], g.ancestor(lv)
			}
			if *h&y.bit != 0 {
				continue
			}
			handed := p.bit == y.bit && p.flags&granted != 0
			// A group slot taken here is kept until every permit is held, so
			// the task is not turned away between the layers. An
			// ancestor's is kept until the walk stops, and then only if
			// the task waits at that ancestor's layer, or past a full
			// queue's threshold (see wait). So a caller handed an
			// ancestor's slot (Block) still holds it at the ancestor's
			// next layer.
			var seen uint64
			if lv > 0 {
				seen = a.queue.nudges() // before the permit is tried (see Block)
			}
			// A layer: the permit handed over, or one free at once, or a
			// place in line (wait). A fresh walk leaves a free permit to the
			// tasks of its group walking on from hand-offs, and waits for
			// its turn (turn.go), or takes one that leaves theirs free
			// (takeBeside).
			l := a.lineOf(y.bit)
			free := l.waiting.Load() == 0
			yield, spare := false, int64(0)
			if fresh && (i > 0 || lv > 0) {
				yield, spare = l.yields(g, i, lv)
			}
			took := false // the permit handed over
			switch {
			case handed && x.lvl() == lv:
				p.flags &^= granted
				*h |= y.bit
				took = true
			case free && !yield && l.takeFor(p, x, y.bit, lv):
				*h |= y.bit
			case free && spare > 0 && l.takeBeside(x, y.bit, lv, spare):
				*h |= y.bit
			default:
				if out := p.wait(l, &a.queueOf(y.slot).line, h, x, y.bit, y.slot, lv, yield); out != Admitted {
					if out == Rejected && x != nil { // else a line may own p by now
						x.above, x.seen = lv, seen
					}
					return p.stop(out, y.bit, reasonOf(y.slot))
				}
			}
			if y.bit == heldGlobal {
				gl.tookGlobal(p, handed)
			}
			if x != nil {
				gl.counted(x, a, y.bit, lv, 1)
				if lv > 0 && !handed { // the kidQueue that handed it counted it (kidQueue.pop)
					gl.kidHeld(g, x, y.bit, lv, 1)
				}
			}
			if took && mid { // once it is counted as held
				if *moved = p.sendBack(gl, depth); *moved != nil {
					return MustWait, ""
				}
			}
		}
	}
admitted:
	p.held |= countedRunning
	gl.runningIn(p)
	if x != nil {
		p.countRunning(x, 1)
		p.dropSlotsAbove(x, 0)
	}
	p.stopWaiting()
	p.dropSlot(&g.queue, heldGroupSlot)
	return Admitted, ""
}

// wait takes a slot of queue q and a place in line l, at level lv, for a
// task with no permit of l handed over nor free at once. h is the held
// bits of that level, x the task's Ext (nil for a plain task). With park,
// it waits for its group's turn instead, if another task has it
// (waitTurn).
//
// A task that waits gives back the slots it holds of other ancestors'
// queues. But one that takes q's slot past its threshold (keepSlot) keeps
// them. One of them is the slot it was accepted on. So it still counts
// within a threshold of its chain, and the slot it leaves is no room for
// a new task to wait past them all.
func (p *Permits[T]) wait(l, q *line[T], h *uint8, x *Ext, bit, slot, lv uint8, park bool) Outcome {
	kept := false
	if !p.takeSlot(q, slot, h) {
		if kept = p.keepSlot(q, slot, h, x, lv); !kept && !p.makeRoom(q, slot, lv) {
			return Rejected
		}
	}
	if x != nil && !kept {
		p.dropSlotsAbove(x, lv) // it waits here, holding this level's slot
	}
	if p.flags&pause != 0 {
		return WouldWait
	}
	p.startWaiting()
	if x != nil {
		x.level = lv
	}
	if park && p.waitTurn() {
		return MustWait
	}
	p.bit = bit
	if l.join(p, x) { // else the line owns the task now: hands off
		*h |= bit
		return Admitted
	}
	return MustWait
}

// startWaiting counts a task about to join a line as waiting, once.
func (p *Permits[T]) startWaiting() {
	if p.held&countedWaiting == 0 {
		p.held |= countedWaiting
		p.group.waiting.Add(1)
		p.waited(uint32(p.group.global.waitIn.Add(1)))
	}
}

// stopWaiting takes the task out of the waiting counts.
func (p *Permits[T]) stopWaiting() {
	if p.held&countedWaiting != 0 {
		p.held &^= countedWaiting
		p.group.waiting.Add(-1)
		p.group.global.waitOut.Add(1)
	}
}
