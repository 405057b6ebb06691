package groupstate

// This file is about RejectDiscardOldest: a task that finds its queue full
// takes the slot of a waiting one (makeRoom).

// makeRoom is for a task that found its queue q full. bit names the queue,
// the global one or that of its group's ancestor at level lv (0: its own
// group). If the task may displace another, it takes the slot of the
// oldest waiting task of the lowest priority at or below its own. The task
// displaced is out of its line and given to the Global's displaced hook,
// for p's owner to end. It keeps the permits it held of earlier layers.
//
// It displaces nobody while a caller is blocked on q. Otherwise the slot
// would go to the newcomer, past the caller waiting for the next one. The
// task is turned away then, as under RejectDiscard. A caller that blocks
// just after the check came after the task, which it does not pass either.
// A paused walk (a blocking caller's) waits for room rather than make it.
//
// A queue past its threshold holds slots that accepted tasks kept as they
// moved on (keepSlot). Such a task still holds the slot it was accepted
// on, in another queue. Its slot here is no room within the threshold. A
// task that took it, holding no other, would wait past the thresholds of
// its chain. So while the queue is past its threshold, only a task that
// holds no other slot is displaced (within).
func (p *Permits[T]) makeRoom(q *line[T], bit, lv uint8) bool {
	if p.flags&pause != 0 || !p.group.global.displacing.Load() || q.waiting.Load() != 0 {
		return false
	}
	a := p.group.ancestor(lv)
	within := q.held.load() > q.limit.Load()
	for {
		v, l := victim(p.prio, bit, a, within)
		if v == nil {
			return false
		}
		if p.takeRoom(v, l, bit, a, lv) {
			return true
		}
	}
}

// takeRoom takes for p the slot (bit) of v, which victim found waiting in
// l, and reports whether it did. The queue is a's, or the global one, at
// level lv of p's group. It does not take the slot if v has moved since.
// If v was served meanwhile, it may wait at a later layer by now. And under
// IsolationOff a task gives its global slot back once past the global
// layer. So taking v out of whatever line it is in could take a slot
// nobody holds.
func (p *Permits[T]) takeRoom(v *Permits[T], l *line[T], bit uint8, a *Group[T], lv uint8) bool {
	vl := v.levelOf(a)
	if bit == heldGlobalSlot {
		vl = 0
	}
	if !v.leaveFrom(l, bit, vl) {
		return false
	}
	*v.heldAt(vl) &^= bit
	*p.heldAt(lv) |= bit
	p.group.global.displaced(v.task())
	return true
}

// victim returns the oldest waiting task of the lowest priority at or
// below prio that holds a slot of the queue named by bit. The queue is g's
// or the global one. With within set, a task that holds a slot of another
// queue too is passed over (see makeRoom). It also returns the line the
// task waits in. It returns nil if there is no such task. It looks in the
// lines whose waiters hold such a slot (walks): g's layers, which its
// subtree's tasks wait in too, and for g's queue the pause lines of g and
// its ancestors. A task a lowered limit sent back to an earlier line may
// hold no slot of that line's queue.
//
// Tasks that tie in age (compareAge), tasks of one group, are taken in the
// order they are looked at. Nothing overtakes in a line. So a task in a
// later layer came before the tasks of its priority that still wait in an
// earlier one. So the layers are looked at last first.
// The pause lines come after them: their tasks walk on in arrival order
// once resumed.
//
// A task of g's subtree that moved on to an ancestor's line keeps its
// slot of g's queue. Those lines hold the ancestor's whole subtree, so
// they are looked at only when no task in g's own lines will do.
func victim[T any](prio, bit uint8, g *Group[T], within bool) (best *Permits[T], in *line[T]) {
	var l *line[T]
	holds := func(w *Permits[T]) bool {
		if bit == heldGlobalSlot {
			return w.held&bit != 0 && !(within && w.otherSlot(bit, 0))
		}
		if !w.group.under(g) {
			return false
		}
		lv := w.levelOf(g)
		return *w.heldAt(lv)&bit != 0 && !(within && w.otherSlot(bit, lv))
	}
	consider := func(w *Permits[T]) {
		switch {
		case w.prio < prio, !holds(w):
		case best == nil, w.prio > best.prio,
			w.prio == best.prio && compareAge(w, best) < 0:
			best, in = w, l
		}
	}
	look := func(at *line[T]) {
		if at == nil || at.waiting.Load() == 0 {
			return
		}
		l = at
		r := l.lock()
		r.q().heads(g, holds, consider)
		r.unlock()
	}
	walk := g.global.walk
	for i := len(walk) - 1; i >= 0; i-- {
		if walk[i].slot == bit {
			look(g.lineOf(walk[i].bit))
		}
	}
	if bit != heldGroupSlot {
		return best, in
	}
	for a := g; a != nil; a = a.up() {
		look(a.pauseLine.Load())
	}
	for i := len(walk) - 1; i >= 0 && best == nil; i-- {
		if y := walk[i]; y.slot == bit && y.bit != heldGlobal { // the global line was looked at
			for lv := g.depth(); lv > 0; lv-- {
				look(g.ancestor(lv).lineOf(y.bit))
			}
		}
	}
	return best, in
}

// otherSlot reports whether p holds a slot of a queue other than the one
// named by bit, at level lv of its group: a group's queue for the global
// one, and another level's for a group's.
func (p *Permits[T]) otherSlot(bit, lv uint8) bool {
	x := p.x()
	if bit == heldGlobalSlot {
		return p.holdsGroupSlot(x)
	}
	if lv > 0 && p.held&heldGroupSlot != 0 {
		return true
	}
	if x == nil {
		return false
	}
	for i, b := range x.anc {
		if b&heldGroupSlot != 0 && uint8(i)+1 != lv {
			return true
		}
	}
	return false
}
