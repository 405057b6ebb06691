package groupstate

// A paused group starts none of its tasks. They wait in its pause line,
// ahead of every layer. So they hold no permit of the global cap while
// they wait, and count against the group's queue threshold. The line is
// made on the first pause. A group never paused has none.
//
// Pausing goes the way a lowered limit goes (see limits.go). The tasks of
// the group waiting in any line give back what they took of the layers.
// They wait again in the pause line, in their order. Its concurrency limit
// is held at 0 meanwhile, so a task that passed the gate as the pause
// came waits at its concurrency layer and does not start. Resuming hands
// the pause line's tasks back to the caller, in order, to walk on.

// pauseBit is Permits.bit for a task waiting in its group's pause line. It
// is no bit of Permits.held, because the line holds no permit.
const pauseBit uint8 = 1 << 7

// Paused reports whether the group is paused.
func (g *Group[T]) Paused() bool { return g.paused.Load() }

// gate makes a task of a paused group that holds no permit yet wait in the
// pause line. It reports Admitted if the task may walk on. A task handed a
// permit (Resume) walks on. That is the one the pause line handed back. It
// is also one handed its first layer's permit as the pause came, which it
// must take.
func (p *Permits[T]) gate() Outcome {
	g := p.group
	if p.flags&granted != 0 {
		if p.bit == pauseBit {
			p.flags &^= granted
		}
		return Admitted
	}
	if !g.paused.Load() || p.held&(heldGlobal|heldBulkhead|heldConc) != 0 {
		return Admitted
	}
	return p.step(g.pauseLine.Load(), &g.queue.line, pauseBit, heldGroupSlot)
}

// setPaused stores whether g is paused, making its pause line on the
// first pause. The caller holds the registry's mu, in a change of limits.
func (g *Group[T]) setPaused(on bool) {
	if on && g.pauseLine.Load() == nil {
		l := new(line[T])
		l.init(0, false)
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
// in its layers' lines to its pause line, in the order they were
// submitted, ahead of any there. They give back the permits they hold and
// the global queue's slot. The tasks handed those permits go in c.
func (g *Group[T]) park(c *Changes[T]) {
	pl := g.pauseLine.Load()
	if !g.paused.Load() || pl == nil {
		return
	}
	var ws []*Permits[T]
	for _, y := range g.global.layers(g) {
		ws = y.l.takeOut(g, nil, ws)
	}
	if len(ws) == 0 {
		return
	}
	sortBySubmitted(ws)
	for _, p := range ws {
		for _, y := range g.global.layers(g) {
			p.releaseLine(y.l, y.bit)
		}
		for h := p.Handed(); h != nil; h = p.Handed() {
			c.Handed = append(c.Handed, h)
		}
		p.dropSlot(g.global.queue, heldGlobalSlot)
		c.Requeued = append(c.Requeued, p.task())
	}
	r := pl.lock()
	defer r.unlock()
	q := r.q()
	for i := len(ws) - 1; i >= 0; i-- {
		w := ws[i]
		w.bit = pauseBit
		pl.waiting.Add(1)
		pl.pushLocked(q, w, true)
	}
}

// unpark, in a change of limits that resumed g, takes the tasks out of its
// pause line, in order, for the caller to walk on (Changes.Resumed).
func (g *Group[T]) unpark(c *Changes[T]) {
	pl := g.pauseLine.Load()
	if g.paused.Load() || pl == nil {
		return
	}
	for _, w := range pl.takeOut(g, nil, nil) {
		c.Resumed = append(c.Resumed, w.task())
	}
}

// waitLines returns the lines g's tasks may wait in, in walking order.
// That is its pause line (nil if never made), then its layers' lines.
func (g *Group[T]) waitLines() [4]*line[T] {
	ys := g.global.layers(g)
	return [4]*line[T]{g.pauseLine.Load(), ys[0].l, ys[1].l, ys[2].l}
}
