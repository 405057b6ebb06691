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
// not start. If it must wait, it is moved to the pause line too (Repark).
// Resuming hands the pause line's tasks back to the caller, in order, to
// walk on.

// pauseBit is Permits.bit for a task waiting in its group's pause line. It
// is no bit of Permits.held, because the line holds no permit.
const pauseBit uint8 = 1 << 7

// Paused reports whether the group, or one of its ancestors, is paused.
func (g *Group[T]) Paused() bool { return g.pausedAt() != nil }

// gate makes a task of a paused group that holds no permit yet wait in the
// pause line. It reports Admitted if the task may walk on. A task handed a
// permit (Resume) walks on. That is the one the pause line handed back,
// unless an ancestor is paused still. It is also one handed its first
// layer's permit as the pause came, which it must take.
func (p *Permits[T]) gate() Outcome {
	g := p.group
	if p.flags&granted != 0 {
		switch p.bit {
		case pauseBit:
			p.flags &^= granted
			if g.parent == nil {
				return Admitted
			}
		case turnBit: // a fresh walk's turn came: it was handed nothing
			p.flags &^= granted
		default:
			return Admitted
		}
	}
	if p.held&(heldGlobal|heldBulkhead|heldConc) != 0 || !g.paused.Load() && g.parent == nil {
		return Admitted
	}
	for {
		a := g.pausedAt()
		if a == nil {
			return Admitted
		}
		// A resume clears paused, then takes the pause line's tasks out
		// (unpark). A task that joins after that is left for no one: it
		// finds a resumed, leaves, and looks again. One that joined before
		// is taken out by the resume, or leaves first: leave and unpark
		// take it under the line's lock, so one of them does.
		out := p.step(a.pauseLine.Load(), &g.queue.line, &p.held, p.x(), pauseBit, heldGroupSlot, 0)
		if out != MustWait || a.paused.Load() || !p.leave() {
			return out
		}
	}
}

// pausedAt returns g, or its nearest ancestor, if paused, or nil. A
// task of a paused subtree waits in the pause line of the group paused.
func (g *Group[T]) pausedAt() *Group[T] {
	for a := g; a != nil; a = a.up() {
		if a.paused.Load() {
			return a
		}
	}
	return nil
}

// setPaused stores whether g is paused, making its pause line on the
// first pause. The caller holds the registry's mu, in a change of limits.
func (g *Group[T]) setPaused(on bool) {
	if on && g.pauseLine.Load() == nil {
		l := new(line[T])
		l.init(0)
		g.pauseLine.Store(l)
	}
	g.paused.Store(on)
	if on {
		g.reg.active.join(g) // after the store: see active.sweepLocked
	}
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
// they were submitted: a task that walked as the pause came can join a
// layer's line after the pause moved the others (see Repark).
func (g *Group[T]) park(c *Changes[T]) {
	pl := g.pauseLine.Load()
	if !g.paused.Load() || pl == nil {
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
// that walked as the pause came may join such a line after that change:
// Try or Resume returns MustWait with g paused. It must not wait there,
// holding a permit of the global cap or of an ancestor. The caller
// carries on the changes as it does Update's.
func (r *Registry[T]) Repark(g *Group[T]) *Changes[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := new(Changes[T])
	if a := g.pausedAt(); a != nil {
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
		return ws
	}
	seen := map[*line[T]]bool{}
	for _, d := range append(g.reg.Subtree(g), g) {
		for _, l := range d.layerLines() {
			if !seen[l] {
				seen[l] = true
				ws = c.takeOut(l, nil, in, ws)
			}
		}
	}
	return ws
}

// unpark, in a change of limits that resumed g, takes the tasks out of its
// pause line, in order, for the caller to walk on (Changes.Resumed).
func (g *Group[T]) unpark(c *Changes[T]) {
	pl := g.pauseLine.Load()
	if g.paused.Load() || pl == nil {
		return
	}
	for _, w := range pl.takeOut(g, nil, nil) {
		if x := w.x(); x != nil {
			x.resumed = true
		}
		c.Resumed = append(c.Resumed, w.task())
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
