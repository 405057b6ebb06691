package groupstate

import "sync/atomic"

// slots bounds how many tasks may wait. It is a count of slots taken
// against a limit that may change. A lowered limit takes no slot back.
//
// It is a line whose permits are slots. Its waiters are callers that would
// rather wait for a slot than be turned away (blocking submissions). A
// slot given back while a caller waits goes to the first of them, once the
// door below is free. They are served in order of priority and then of
// arrival. A task that does not wait never takes a slot while one does
// (tryAcquire). So nothing barges past a waiting caller.
//
// Its slots are handed to one waiting caller at a time, through a door.
// Several callers may be handed slots at the same moment. A raised
// threshold does that, and so do tasks ending together on several
// goroutines. Each would place its task from a goroutine of its own, in
// whatever order those run. So the caller handed a slot holds the queue's
// door until its task has its place. That is once it joined its next line,
// got every permit, or gave everything back (Door.Pass, Release). Only
// then is a free slot handed on, with the door, to the next waiting
// caller. So callers place their tasks, are announced and start in the
// order the queue serves them. One not handed a slot yet can still give
// up, as ever, while another holds the door.
//
// Like every line's, its waiters are made on first need (see waiters).
type slots[T any] struct {
	line[T]
	// freed counts the nudges and the quiet releases so far (see nudge,
	// quiet). Its lowest bits say whether a caller holds the door, and
	// which causes were given back quietly meanwhile. Those bits change
	// only under the waiters' mu. They share a word so that a group's
	// slots take no more room than before the door.
	freed atomic.Uint64
}

// Bits of slots.freed. Each count wraps, and a carry out of one adds to
// the next: at most one walk again for nothing. A caller compares them
// across a walk of its own, far fewer releases than a wrap.
const (
	doorHeld     uint64 = 1 // a caller holds the door
	pendingShift        = 1 // three bits: causes given back quietly while the door was held (see quiet)
	pendingBits  uint64 = 7
	nudgeShift          = 4
	countBits           = 15
	countMask    uint64 = 1<<countBits - 1
	aNudge       uint64 = 1 << nudgeShift        // one nudge
	quietShift          = nudgeShift + countBits // then a count of quiet releases for each cause
	aQuiet       uint64 = 1 << quietShift
)

// load returns the slots taken.
func (s *slots[T]) load() int64 { return s.held.load() }

// nudges returns the counts of nudges and quiet releases so far, for a
// caller to read before its walk (see block).
func (s *slots[T]) nudges() uint64 { return s.freed.Load() &^ (doorHeld | pendingBits<<pendingShift) }

// nudgedSince reports whether a nudge came since seen, read from nudges.
func (s *slots[T]) nudgedSince(seen uint64) bool {
	return (s.freed.Load()^seen)>>nudgeShift&countMask != 0
}

// give gives back a slot. It returns the waiting caller handed a slot and
// the door, if any, taken out of line. The caller owns it now, and wakes
// it. While the door is held, the slot stays free for its holder to hand
// on (pass). A task that does not block still never takes it while a
// caller waits (tryAcquire).
func (s *slots[T]) give() *Permits[T] {
	s.held.give()
	if s.waiting.Load() == 0 {
		return nil
	}
	// Interleaving: as in line.release, a caller that announced itself
	// after the load above takes the slot itself (block), or finds the
	// door held and waits for its holder to hand the slot on.
	r := s.lock()
	defer r.unlock()
	return s.handLocked(r.q())
}

// handLocked hands a free slot, with the door, to the first waiting
// caller, unless the door is held, and returns that caller as give does.
func (s *slots[T]) handLocked(q queue[T]) *Permits[T] {
	if s.freed.Load()&doorHeld != 0 || q.empty() || !s.take() {
		return nil
	}
	s.freed.Or(doorHeld)
	return s.popLocked(q)
}

// block takes a slot for w's caller at once if one is free, nobody waits
// for one and nobody holds the door. Then it reports acquired. For a queue
// of no slots, it reports retry if a nudge came since the caller read
// seen, as its task may start at once now. So it does if a permit of w's
// cause was given back quietly (see quiet). Otherwise it puts w in the
// line of waiting callers, by priority and then arrival, and reports
// neither. A caller nudged before (front) goes back to the head of its
// priority. The line owns w then, until give, pass or nudge hands it on,
// or w leaves.
//
// holder says that w's caller holds the door a nudge of this queue gave
// it, and its walk found no permit. It keeps the door to walk again if
// another nudge came since seen. Otherwise it gives the door back, and
// waits first in line. The caller the door then goes to is returned as
// give does. That is one handed a free slot, if the queue has slots by
// now, or one woken for a permit given back quietly meanwhile
// (pendingLocked).
func (s *slots[T]) block(w *Permits[T], seen uint64, holder, front bool) (acquired, retry bool, handed *Permits[T]) {
	r := s.lock()
	defer r.unlock()
	q := r.q()
	none := s.limit.Load() == 0
	if holder {
		if none && (s.nudgedSince(seen) || s.quietSince(w, seen)) {
			return false, true, nil
		}
		s.freed.And(^doorHeld)
		w.flags &^= nudged
		defer func() {
			if !acquired && !retry {
				if handed = s.handLocked(q); handed == nil {
					handed = s.pendingLocked(q)
				}
			}
		}()
	}
	if s.freed.Load()&doorHeld != 0 {
		// It came after the door's holder. So it waits for its turn, and
		// the slot it may have seen free is the holder's to hand on.
		s.waiting.Add(1) // as enterLocked announces a joiner
	} else if s.enterLocked(q) {
		return true, false, nil
	}
	// Interleaving: a nudge adds to freed before it looks for waiters. One
	// that found the door held left the next turn to the door's holder. A
	// quiet release wakes only a caller of its cause in line, which w is
	// not yet: so w walks again whoever waits.
	if none && (s.quietSince(w, seen) || q.empty() && s.nudgedSince(seen) && s.freed.Load()&doorHeld == 0) {
		s.withdrawLocked()
		return false, true, nil
	}
	s.pushLocked(r, w, front)
	return false, false, nil
}

// nudge, for a queue of no slots, takes the first waiting caller out of
// line, without a slot, to be woken. A permit was just given back, and its
// task may start on it at once. No slot ever frees in such a queue, so
// this is what ends such a wait. It returns the caller as give does.
//
// The caller woken holds the queue's door, as one handed a slot does,
// until its task has its place or it waits again (see block). A nudge
// meanwhile wakes nobody: the holder lets the next caller in (pass),
// or walks again itself. So callers nudged together, by tasks ending
// together or a raise, are still let in one at a time, in their order.
func (s *slots[T]) nudge() *Permits[T] {
	if s.limit.Load() != 0 {
		return nil
	}
	s.freed.Add(aNudge)
	if s.waiting.Load() == 0 {
		return nil
	}
	r := s.lock()
	defer r.unlock()
	return s.nudgeLocked(r.q())
}

// nudgeLocked takes the first waiting caller out of line, with the door,
// unless the door is held, and returns it as nudge does.
func (s *slots[T]) nudgeLocked(q queue[T]) *Permits[T] {
	if s.freed.Load()&doorHeld != 0 || q.empty() {
		return nil
	}
	s.freed.Or(doorHeld)
	w := s.popLocked(q)
	w.flags |= nudged
	return w
}

// pass takes the door back from the caller that held it, whose task has
// its place now, and hands it on. A queue with slots hands it with a free
// slot to the next waiting caller. A queue of no slots, even one that had
// slots when the door was taken, hands it with a nudge. A nudge that came
// meanwhile woke nobody (see nudge). It returns that caller, and whether
// it was handed a slot.
func (s *slots[T]) pass() (w *Permits[T], slot bool) {
	r := s.lock()
	defer r.unlock()
	s.freed.And(^doorHeld)
	q := r.q()
	if s.limit.Load() != 0 {
		return s.handLocked(q), true
	}
	return s.nudgeLocked(q), false
}

// handOut hands a slot a raised limit frees to the first waiting caller,
// and returns that caller as give does. The callers after it are handed
// theirs in turn, through the door. A change of limits calls it in its
// last pass (see limits.go), once every layer's new limit is in force.
// This is because a caller woken earlier could walk through a layer whose
// lowered limit is not stored yet.
func (s *slots[T]) handOut() *Permits[T] {
	if s.waiting.Load() == 0 {
		return nil
	}
	r := s.lock()
	defer r.unlock()
	return s.handLocked(r.q())
}

// takeSlot takes a place in queue q for a task about to wait, unless it
// holds one. h holds the task's bits at the queue's level. It reports
// false when the queue is full, or when callers wait for a slot of it.
func (p *Permits[T]) takeSlot(q *line[T], slot uint8, h *uint8) bool {
	if *h&slot != 0 {
		return true
	}
	if !q.tryAcquire() {
		return false
	}
	*h |= slot
	return true
}

// keepSlot takes a slot of queue q past its threshold for a task that was
// accepted and waits already, and reports whether it took one. h holds the
// task's bits at the queue's level lv, and x is its Ext. Such a task is
// never turned away after Submit for a full queue. It waits on, as a task
// waiting when a threshold is lowered does, and new tasks are turned away
// until the queue is below its threshold again. That is a task that holds
// a slot of a group's queue, its own or an ancestor's: one that waits
// there, or a blocked caller's task accepted on it (see Pause). It is also
// one a resume walks on. That one parked holding its own group's slot
// (holdGroupSlot), so under IsolationOff it comes to the global queue
// holding that. A task that waited only for the global cap (IsolationOff)
// holds no group slot, so a full group queue still turns it away, as the
// seed's order does.
func (p *Permits[T]) keepSlot(q *line[T], slot uint8, h *uint8, x *Ext, lv uint8) bool {
	switch {
	case slot == heldGlobalSlot && p.held&heldGroupSlot != 0: // resumed
	case lv > 0 && x.unparked != 0:
	case slot == heldGroupSlot && p.flags&pause == 0 && p.holdsGroupSlot(x):
	default:
		return false
	}
	q.held.add()
	*h |= slot
	return true
}

// holdSlotAt makes p, sent back to the line of ancestor a at level lv (0:
// its own group's), hold a slot of a's queue, past its threshold if need
// be, unless it holds a slot of its chain. yield gave back the one it
// waited on further along. So a lowered limit never has a waiting task
// turned away later for a full queue (keepSlot), as a lowered threshold
// does not.
func (p *Permits[T]) holdSlotAt(a *Group[T], lv uint8) {
	x := p.x()
	switch {
	case p.holdsGroupSlot(x):
	case lv == 0:
		p.holdGroupSlot()
	default:
		x.anc[lv-1] |= heldGroupSlot
		a.queue.held.add()
	}
}

// holdsGroupSlot reports whether p, of Ext x, holds a slot of its group's
// queue or of an ancestor's.
func (p *Permits[T]) holdsGroupSlot(x *Ext) bool {
	return p.held&heldGroupSlot != 0 || x != nil && x.slotAbove()
}

// dropSlotAt gives back the slot of ancestor a's queue that p holds, if
// h, its bits at a's level, say it holds one.
func (p *Permits[T]) dropSlotAt(a *Group[T], h *uint8) {
	if *h&heldGroupSlot != 0 { // most tasks hold none: kept small enough to inline
		p.giveSlotAt(a, h)
	}
}

// giveSlotAt is dropSlotAt's giving back.
func (p *Permits[T]) giveSlotAt(a *Group[T], h *uint8) {
	*h &^= heldGroupSlot
	p.group.global.handSlots(a.queue.give(), heldGroupSlot)
}

// dropSlotsAbove gives back the slots p, of Ext x, holds of its ancestors'
// queues, but at level keep.
func (p *Permits[T]) dropSlotsAbove(x *Ext, keep uint8) {
	if x.slotAbove() { // most tasks hold none: kept small enough to inline
		p.dropSlotsBut(x, keep)
	}
}

// dropSlotsBut is dropSlotsAbove's loop.
func (p *Permits[T]) dropSlotsBut(x *Ext, keep uint8) {
	lv := uint8(1)
	for a := p.group.up(); a != nil; a, lv = a.up(), lv+1 {
		if lv != keep {
			p.dropSlotAt(a, &x.anc[lv-1])
		}
	}
}

// dropSlot gives back the slot of q that p holds, if it holds one.
func (p *Permits[T]) dropSlot(q *slots[T], slot uint8) {
	if p.held&slot != 0 { // most tasks never held one: kept small enough to inline
		p.giveSlot(q, slot)
	}
}

// giveSlot gives back the slot p holds in q, to a caller waiting for one
// if any.
func (p *Permits[T]) giveSlot(q *slots[T], slot uint8) {
	p.held &^= slot
	p.group.global.handSlots(q.give(), slot)
}
