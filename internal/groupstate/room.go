package groupstate

// This file is about room in a full queue. A caller may wait for a slot of
// it (Block, and the slots' line of waiting callers). Or, under
// RejectDiscardOldest, a task may take the slot of a waiting one
// (makeRoom, in displace.go). The options a walk takes for them are set
// on Permits before it starts.

// Bits of Permits.flags.
const (
	pause        uint8 = 1 << iota // stop the walk before joining a line (WouldWait)
	nudged                         // its caller was woken without a slot, with the door (see slots.nudge)
	quietRelease                   // a blocked caller's walk turned away gives back what it took: no nudge
	granted                        // Resume: the permit of the layer bit was handed over
	countedFlag                    // the task is counted in its group's refs (see Registry.Enter)
	doorGroup                      // its caller holds the door of its group's queue (see slots)
	doorGlobal                     // its caller holds the door of the global queue
	extended                       // the task has an Ext (see ext.go)

	doors = doorGroup | doorGlobal
)

// SetPriority sets the task's priority (0 is the highest). Call it before
// the first Try.
func (p *Permits[T]) SetPriority(prio uint8) {
	p.prio = min(prio, NumPriorities-1)
}

// SetDisplacing sets whether a task that finds its queue full takes the
// slot of a waiting task of its priority or a lower one (see makeRoom).
// It is read when a task is turned away, not when it enters. So a change
// reaches the tasks already waiting too.
func (gl *Global[T]) SetDisplacing(on bool) { gl.displacing.Store(on) }

// Pause makes Try stop short of joining a line, with WouldWait, while on.
// The task is not in the hands of any line yet. So its owner may still
// decide what to do before it waits. A blocking submission accepts it only
// then. Try again, with Pause off, to go on.
func (p *Permits[T]) Pause(on bool) {
	if on {
		p.flags |= pause
	} else {
		p.flags &^= pause
	}
}

// Restamp sets the task's Submit time. A blocking submission is accepted,
// and waits from, when it got its slot. Call it only before the task joins
// a line.
func (p *Permits[T]) Restamp(submitted int64) { p.submitted = submitted }

// Nudges returns how many times the task's queues have been nudged so far.
// The queues are its group's and the global one. Read it before a walk,
// for Block.
func (p *Permits[T]) Nudges() (group, global uint64) {
	return p.group.queue.nudges(), p.group.global.queue.nudges()
}

// Block puts the task's caller in a queue's line of waiting callers, and
// counts it blocked. The caller's walk was Rejected for reason, which names
// the full queue, its group's or the global one. seen is Nudges' count for
// that queue before the walk. Block reports false if the caller is to walk
// again at once instead. That is so if a slot was free by then, and the
// task holds it. It is also so if, in a queue of no slots, a permit came
// free since the walk. Otherwise the line owns the task until one of three
// things. A slot may be handed to it. Then the Global's wake is called for
// it, and it holds the slot and the queue's door from then on (see
// TakeDoor). It may be nudged, which wakes it with no slot. Or it may leave
// (Leave). Either way its caller calls Unblock once done waiting. The task
// must hold nothing, as a Rejected walk gave everything back.
//
// The full queue may be an ancestor's (Permits.Extend). Then its caller
// waits for a slot of that queue, seen is read from the walk, and the slot
// is held at the ancestor's level.
func (p *Permits[T]) Block(reason string, seen uint64) (waits bool) {
	g := p.group
	g.blocked.Add(1)
	g.global.blocked.Add(1)
	q, slot, lv := &g.queue, heldGroupSlot, uint8(0)
	if reason == ReasonGlobalQueueFull {
		q, slot = g.global.queue, heldGlobalSlot
	}
	if p.flags&extended != 0 {
		x := p.ext()
		if x.above > 0 && reason == ReasonGroupQueueFull {
			lv, seen = x.above, x.seen
			q = &g.ancestor(lv).queue
		}
	}
	// A caller a nudge woke holds that queue's door (see slots.nudge). It
	// gives it back in q's block if it waits there again, else here.
	front := p.flags&nudged != 0 // first in line again
	holder := false
	if front {
		if d := p.takeDoor(); d.q == q {
			holder = true
			p.flags |= nudged
		} else {
			d.Pass()
		}
	}
	if p.flags&extended != 0 {
		p.ext().level = lv
	}
	p.bit = slot | p.bit&causeBits // its cause was kept by the walk (turnedAway)
	acquired, retry, handed := q.block(p, seen, holder, front)
	if acquired {
		*p.heldAt(lv) |= slot
	}
	if handed != nil && handed.flags&nudged != 0 {
		slot = 0 // woken for a permit given back quietly: no slot
	}
	g.global.handSlots(handed, slot)
	return !acquired && !retry
}

// Holds reports whether the task holds anything. A blocked caller's task
// holds a slot once one is handed to it.
func (p *Permits[T]) Holds() bool { return p.held != 0 || p.flags&extended != 0 && p.holdsAbove() }

// holdsAbove reports whether p holds anything of an ancestor's: a blocked
// caller may have been handed an ancestor's queue slot alone.
func (p *Permits[T]) holdsAbove() bool { return p.ext().anc != [MaxAncestors]uint8{} }

// Unblock counts the task's caller out of the blocked counts.
func (p *Permits[T]) Unblock() {
	p.group.blocked.Add(-1)
	p.group.global.blocked.Add(-1)
}

// handSlots gives the callers a queue's give handed a slot (bit) their
// slot and its door, and wakes them. Each owns its task again from then
// on. A nudge hands no slot (bit 0), nor the door.
func (gl *Global[T]) handSlots(chain *Permits[T], bit uint8) {
	for w := chain; w != nil; {
		next := w.next
		w.next = nil
		*w.heldAt(w.waitLevel()) |= bit // its level was set by Block
		switch bit {
		case heldGroupSlot:
			w.flags |= doorGroup
		case heldGlobalSlot:
			w.flags |= doorGlobal
		}
		gl.wake(w.task())
		w = next
	}
}

// Door is the door of a queue (see slots), taken from the task whose
// caller held it. Its zero value is no door.
type Door[T any] struct {
	q   *slots[T]
	bit uint8 // the queue's slot bit
	gl  *Global[T]
}

// TakeDoor takes from the task the door of the queue whose slot its
// blocked caller was handed, if it holds one. Its owner passes the door on
// once the task has its place. That is once Try placed it, so it waits in
// its line, holds every permit, or was rejected. The next caller waiting
// for a slot of that queue is let through only then. So callers handed
// slots together place their tasks in the order they were served. Release
// passes a door the task still holds.
//
// A caller woken by a nudge holds no slot, but its Door passes the nudge
// on. This is because a raised limit frees many permits at once. Each
// caller let in lets in the next, until one finds no permit free and waits
// again.
func (p *Permits[T]) TakeDoor() Door[T] {
	if p.flags&(doors|nudged) == 0 {
		return Door[T]{}
	}
	return p.takeDoor()
}

// takeDoor is TakeDoor for a task that holds a door, kept apart so that
// TakeDoor inlines.
func (p *Permits[T]) takeDoor() Door[T] {
	d := Door[T]{q: &p.group.ancestor(p.waitLevel()).queue, bit: heldGroupSlot, gl: p.group.global}
	if p.flags&doorGlobal != 0 || p.flags&nudged != 0 && p.bit&heldGlobalSlot != 0 {
		d.q, d.bit = d.gl.queue, heldGlobalSlot
	}
	p.flags &^= doors | nudged
	return d
}

// Pass hands the door on to the next caller waiting for a slot of the
// queue, and wakes it: with a free slot, or with a nudge if the queue has
// no slots by now (see slots.pass). Pass uses nothing of the task the door
// was taken from, which may belong to a line by now.
func (d Door[T]) Pass() {
	if d.q == nil {
		return
	}
	w, slot := d.q.pass()
	if !slot {
		d.bit = 0 // a nudge hands no slot
	}
	d.gl.handSlots(w, d.bit)
}

// SetHooks sets three hooks. wake wakes a caller waiting for a queue slot
// once it is handed one. displaced is given a waiting task displaced by
// another (see makeRoom), out of its line, and owns the task from then on.
// stopped tells whether a task should stop waiting (see
// Permits.releaseFair). It is called on any goroutine, with no lock held.
// None may block. Call SetHooks before any task joins.
func (gl *Global[T]) SetHooks(wake func(*T), displaced func(victim *T), stopped func(*T) bool) {
	gl.wake, gl.displaced, gl.stopped = wake, displaced, stopped
}

// SetExt sets the hook that returns an extended task's Ext (see
// Permits.Extend). Call it before any task enters.
func (gl *Global[T]) SetExt(ext func(*T) *Ext) { gl.extOf = ext }

// Blocked reports the callers waiting for a queue slot, all groups.
func (gl *Global[T]) Blocked() int { return int(max(gl.blocked.Load(), 0)) }

// Blocked reports the callers waiting for a queue slot to submit to g.
func (g *Group[T]) Blocked() int { return int(max(g.blocked.Load(), 0)) }
