package groupstate

// A paused group starts none of its tasks. They wait in its pause line,
// ahead of every layer. So they hold no permit of the global cap while
// they wait, and count against the group's queue threshold. The line is
// made on the first pause. A group never paused has none.
//
// Pausing goes the way a lowered limit goes (see limits.go). The tasks of
// the group waiting in any line give back what they took of the layers.
// They wait again in the pause line, in their order, each holding a slot
// of its own group's queue (holdGroupSlot). Its concurrency limit is held
// at 0 meanwhile, so a task that passed the gate as the pause came does
// not start. If it must wait, it is moved to the pause line too (Repark),
// and so is a fresh walk waiting for its group's turn (takeOutTurns).
//
// Resuming first moves the tasks that reached a layer's line while paused
// to the pause line, then raises the limit. It leaves the tasks in the
// pause line. The caller takes them out one at a time, in order, to walk
// on (Unpark), and a new task of the subtree waits in the line behind
// them until it is empty. So none starts ahead of a task submitted before
// it. One exception is left: a walk that passed the gate before a pause
// and reaches its next line only after the resume has raised the limit.

// The states of Group.paused.
const (
	pausedOn  uint32 = 1 << iota // paused
	drainOn                      // resumed, with tasks in the pause line to walk on
	drainerOn                    // a caller takes them out (StartDrain), set under the line's lock
	resumedOn                    // resumed by the change of limits under way (see park)
)

// pauseBit is Permits.bit for a task waiting in its group's pause line. It
// is no bit of Permits.held, because the line holds no permit.
const pauseBit uint8 = 1 << 7

// gate makes a task of a paused group that holds no permit yet wait in the
// pause line. It reports Admitted if the task may walk on. A task handed a
// permit (Resume) walks on. That is the one the pause line handed back,
// unless a group on its path is paused, or an ancestor of the group whose
// line it left is being drained, or a drained line it passes holds a task
// served before it (waitsAt). It is also one handed its first layer's
// permit as the pause came, which it must take.
func (p *Permits[T]) gate() Outcome {
	g := p.group
	from := -1 // a new task waits behind any resumed line's tasks
	if p.flags&granted != 0 {
		switch p.bit {
		case pauseBit:
			p.flags &^= granted
			from = 0
			if x := p.x(); x != nil {
				from = int(x.unparked) - 1
			}
		case turnBit: // a fresh walk's turn came: it was handed nothing
			p.flags &^= granted
		default:
			return Admitted
		}
	}
	if p.held&(heldGlobal|heldBulkhead|heldConc) != 0 || g.paused.Load() == 0 && g.parent == nil {
		return Admitted
	}
	for {
		a := g.waitsAt(from, p)
		if a == nil {
			return Admitted
		}
		// The line is emptied, and drainOn cleared, under its lock
		// (Unpark). A task that joins after that would be left for no
		// one. So it looks whether a is still paused or drained, and if
		// not leaves and looks again. One that joined before is taken out
		// by Unpark, or leaves first. Both take it under the line's lock.
		// It leaves only the pause line. Unpark may have taken it out and
		// walked it on to a layer's line, which owns it now
		// (TestGateLeavesOnlyThePauseLine).
		// It waits on its own group's slot, as a parked task does. A global
		// one handed to its blocked caller goes on as its door passes. A
		// pause line's limit is 0: nobody takes a permit of it.
		p.dropSlot(g.global.queue, heldGlobalSlot)
		pl := a.pauseLine.Load()
		out := p.wait(pl, &g.queue.line, &p.held, p.x(), pauseBit, heldGroupSlot, 0, false)
		if testHookGateJoined != nil {
			testHookGateJoined()
		}
		if out != MustWait || a.paused.Load()&(pausedOn|drainOn) != 0 || !p.leaveFrom(pl, 0, 0) {
			return out
		}
	}
}

// testHookGateJoined, if set, runs in gate just after a walk joined a
// pause line. Tests set it to act as another goroutine there.
var testHookGateJoined func()

// waitsAt returns the nearest group on g's path whose pause line p, a
// task of g, joins, or nil. That is one paused, or one above level from
// being drained. A task taken out of the pause line of the group at level
// from passes the lines drained at or below it. It is older than their
// tasks, which joined once it waited higher up, unless a pause and a
// resume came as it walked and sent older ones back there. So it passes
// such a line only if the line serves none of its tasks before p. A new
// task (from -1) passes none. With from pausedOnly (p nil) it names the
// nearest paused group.
func (g *Group[T]) waitsAt(from int, p *Permits[T]) *Group[T] {
	for a, lv := g, 0; a != nil; a, lv = a.up(), lv+1 {
		st := a.paused.Load()
		if st&pausedOn != 0 || st&drainOn != 0 && (lv > from || p != nil && a.pauseLine.Load().servesBefore(p)) {
			return a
		}
	}
	return nil
}

// servesBefore reports whether a task waits in l that it serves before p.
func (l *line[T]) servesBefore(p *Permits[T]) bool {
	r := l.lock()
	defer r.unlock()
	q := r.q()
	return !q.empty() && servedBefore(q.peek(), p)
}

// pausedOnly is waitsAt's from that passes every line being drained.
const pausedOnly = MaxAncestors

// isPaused reports whether g itself is paused.
func (g *Group[T]) isPaused() bool { return g.paused.Load()&pausedOn != 0 }

// setPaused stores whether g is paused, making its pause line on the
// first pause. The caller holds the registry's mu, in a change of limits.
// A resume restarts g's idle time.
// A resumed group is drained (drainOn) from the same instant, so no new
// task passes the tasks in its pause line meanwhile. Until the change
// ends (unpark) it is resumedOn: park moves what reached its lines while
// paused, and its concurrency limit is raised only after that (grant).
func (g *Group[T]) setPaused(on bool) {
	if on {
		if g.pauseLine.Load() == nil {
			g.pauseLine.Store(newLine[T](0, new(pauseQueue[T])))
		}
		g.paused.Or(pausedOn)
		g.reg.active.join(g) // after the store: see active.sweepLocked
		return
	}
	if g.isPaused() {
		// A paused group is not idle. Its idle time starts now, before it
		// can be seen resumed (see Registry.forget).
		g.idleSince(g.reg.clock())
		g.paused.Or(drainOn | resumedOn)
	}
	g.paused.And(^pausedOn)
}

// concLimit is the concurrency limit to enforce for limits l. It is 0
// while paused.
func concLimit(l Limits) int {
	if l.Paused {
		return 0
	}
	return l.Concurrency
}

// park, in a change of limits that paused g, moves the tasks of g waiting
// in its layers' lines to its pause line. They give back the permits they
// hold and the global queue's slot. The tasks handed those permits go in
// c. The pause line then holds them and those already there in the order
// they were submitted. A task that walked as the pause came can join a
// layer's line after the pause moved the others (see Repark). So a change
// that resumes g moves such tasks too, before the raised limits hand them
// a permit, and they are drained with the rest.
func (g *Group[T]) park(c *Changes[T]) {
	pl := g.pauseLine.Load()
	if g.paused.Load()&(pausedOn|resumedOn) == 0 || pl == nil {
		return
	}
	ws := g.takeOutSubtree(c)
	if len(ws) == 0 {
		return
	}
	for _, p := range ws {
		p.yield(p.group.global.after(p.group, 0, 0), c)
		p.dropSlot(g.global.queue, heldGlobalSlot)
		p.holdGroupSlot()
	}
	ws = pl.takeOut(g, nil, ws)
	sortBySubmitted(ws)
	r := pl.lock()
	defer r.unlock()
	for _, w := range ws {
		w.bit = pauseBit
		pl.waiting.Add(1)
		pl.pushLocked(r, w, false)
		c.Requeued = append(c.Requeued, w.task())
	}
}

// Repark moves the tasks of g's paused subtree that wait in its layers'
// lines to the pause line, as the change that paused it did (park). A task
// that walked as the pause came may join such a line after that change.
// Then Try or Resume returns MustWait with g paused. It must not wait there,
// holding a permit of the global cap or of an ancestor. The caller
// carries on the changes as it does Update's.
func (r *Registry[T]) Repark(g *Group[T]) *Changes[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := new(Changes[T])
	if a := g.waitsAt(pausedOnly, nil); a != nil {
		a.park(c)
	}
	c.settle()
	return c
}

// holdGroupSlot makes p, parked, hold a slot of its own group's queue. A
// paused group's waiting tasks count against their group's threshold. A
// task that waited without one (for a global permit, or at an ancestor's
// layer) takes one even past the threshold. A lowered threshold never
// turns a waiting task away either.
func (p *Permits[T]) holdGroupSlot() {
	if p.held&heldGroupSlot == 0 {
		p.held |= heldGroupSlot
		p.group.queue.held.add()
	}
}

// takeOutSubtree takes the waiting tasks of g's subtree out of the lines of
// its layers, in a change of limits c. A group with children looks in
// every line its subtree's tasks may wait in.
func (g *Group[T]) takeOutSubtree(c *Changes[T]) []*Permits[T] {
	var ws []*Permits[T]
	in := func(p *Permits[T]) bool { return p.group.under(g) } // an ancestor's lines hold others' tasks too
	if !g.hasKids() {
		for _, l := range g.layerLines() {
			ws = c.takeOut(l, g, in, ws)
		}
		return g.takeOutTurns(ws)
	}
	seen := map[*line[T]]bool{}
	for _, d := range append(g.reg.descendants(g), g) {
		for _, l := range d.layerLines() {
			if !seen[l] {
				seen[l] = true
				ws = c.takeOut(l, nil, in, ws)
			}
		}
		ws = d.takeOutTurns(ws)
	}
	return ws
}

// unpark, in a change of limits that resumed g, lists g for the caller
// to drain (Changes.Resumed).
func (g *Group[T]) unpark(c *Changes[T]) {
	g.paused.And(^resumedOn)
	if g.paused.Load()&(pausedOn|drainOn) == drainOn {
		c.Resumed = append(c.Resumed, g)
	}
}

// StartDrain makes the caller the one that takes the tasks out of g's
// pause line, resumed (Unpark), and returns how many wait there, unless
// another caller does, or the line is empty (then 0). A group resumed
// again while a caller still drains it goes on being drained by that one.
func (g *Group[T]) StartDrain() int {
	pl := g.pauseLine.Load()
	r := pl.lock()
	st := g.paused.Load()
	switch {
	case st&drainerOn != 0 || st&(pausedOn|drainOn) != drainOn:
		r.unlock()
		return 0
	case r.q().empty():
		g.paused.And(^drainOn)
		r.unlock()
		g.drained()
		return 0
	}
	g.paused.Or(drainerOn)
	n := int(pl.waiting.Load())
	r.unlock()
	return n
}

// Unpark takes the next task out of g's pause line, for the caller, which
// drains it (StartDrain), to walk on (Resume). It returns nil once the
// line is empty, or g is paused again, and the caller drains it no more.
func (g *Group[T]) Unpark() *T {
	pl := g.pauseLine.Load()
	r := pl.lock()
	q := r.q()
	switch {
	case g.paused.Load()&(pausedOn|resumedOn) != 0: // the next resume drains the rest
		g.paused.And(^drainerOn)
		r.unlock()
		return nil
	case q.empty():
		g.paused.And(^(drainOn | drainerOn))
		r.unlock()
		g.drained()
		return nil
	}
	w := pl.popLocked(q)
	if x := w.x(); x != nil {
		x.unparked = 1 + w.levelOf(g)
	}
	r.unlock()
	return w.task()
}

// drained nudges the queues of no slots of g and its subtree, once g's
// pause line is drained. A caller blocked there as its walk met the drain
// would have waited behind the line's tasks. Its task may start now, and
// no slot frees in such a queue to wake it (see slots.nudge).
func (g *Group[T]) drained() {
	for _, d := range append(g.reg.descendants(g), g) {
		g.global.handSlots(d.queue.nudge(), 0)
	}
}

// waitLines returns the lines g's tasks may wait in, in walking order.
// That is its pause line (nil if never made), then its layers' lines.
func (g *Group[T]) waitLines() [4]*line[T] {
	ys := g.global.layers(g)
	return [4]*line[T]{g.pauseLine.Load(), ys[0].l, ys[1].l, ys[2].l}
}

// layerLines returns the lines of the layers g's tasks walk, its
// ancestors' included.
func (g *Group[T]) layerLines() []*line[T] {
	ls := make([]*line[T], 0, 3+2*g.depth())
	for _, y := range g.global.layers(g) {
		ls = append(ls, y.l)
	}
	for a := g.up(); a != nil; a = a.up() {
		ls = append(ls, &a.bulkhead, &a.conc)
	}
	return ls
}

// under reports whether g is a or in a's subtree.
func (g *Group[T]) under(a *Group[T]) bool {
	for ; g != nil; g = g.up() {
		if g == a {
			return true
		}
	}
	return false
}
