package groupstate

// A snapshot reads here what it needs of a group's waiting tasks beyond
// their counts. That is those the global cap holds back, and how long the
// oldest has waited. A task waiting for its group's turn is in no line,
// so its turns are read too.

// WaitingGlobal reports the group's tasks waiting for a global permit. A
// fresh walk waiting for its group's turn before the global cap counts
// too, as Where names that cap for it.
func (g *Group[T]) WaitingGlobal() int {
	n := int(max(g.chain.n.Load(), 0))
	if g.global.fair { // under IsolationOff no walk waits for its turn there
		at, _ := g.turnWaiters()
		n += at
	}
	return n
}

// OldestWait returns how long the group's oldest waiting task has waited,
// at now on the clock tasks are stamped with. It returns 0 if none waits.
// Lines serve in order, so that task is first in one of the lines the
// group's tasks wait in. They are read in the order tasks go through them.
// So a task moving on is seen in one or the other. A parent's own lines
// hold its subtree's tasks in the order they arrived, not the order they
// were submitted. A child's task arrives once it has passed its own
// group's layers. So there its own oldest is looked for in the whole
// line, as in an ancestor's (oldestOf). A task waiting for its group's
// turn is in no line, so the turns are read too (turnWaiters).
//
// The group keeps no list of its own, so a task that waits touches only
// the line it waits in. BenchmarkW3HotGroup/peer=groupconc-user was slower
// with a list under a lock of the group's.
func (g *Group[T]) OldestWait(now int64) int64 {
	if g.waiting.Load() == 0 {
		return 0
	}
	first := int64(noWaiter)
	kids := g.hasKids()
	for _, l := range g.waitLines() {
		switch {
		case l == nil:
		case kids && l != g.global.line:
			first = min(first, l.oldestOf(g))
		default:
			first = min(first, l.oldest(g))
		}
	}
	_, turn := g.turnWaiters()
	first = min(first, turn)
	for a := g.up(); a != nil; a = a.up() {
		first = min(first, a.bulkhead.oldestOf(g), a.conc.oldestOf(g))
		if pl := a.pauseLine.Load(); pl != nil {
			first = min(first, pl.oldestOf(g))
		}
	}
	if first == noWaiter {
		return 0 // between two lines
	}
	return max(now-first, 0)
}

// turnWaiters reports on g's tasks waiting for their turn, the walker
// aside. It gives how many fresh walks wait before the global cap
// (turnLayer), and when the oldest of them all was submitted (noWaiter
// if none). They count as waiting, in no line. It takes mu only while a task waits for
// its turn. It is for snapshots.
func (g *Group[T]) turnWaiters() (global int, first int64) {
	first = noWaiter
	t := g.turns.Load()
	if t == nil || t.n.Load()&turnCount <= 1 {
		return 0, first
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for w := t.parked.head; w != nil; w = w.links.next {
		first = min(first, w.submitted)
		if w.bit != turnBit {
			continue // handed: it moves from one line to the next
		}
		if bit, _, _ := w.turnLayer(); bit == heldGlobal {
			global++
		}
	}
	return global, first
}
