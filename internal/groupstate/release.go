package groupstate

// This file is the walk back. A task gives back what it holds, in reverse
// order of the walk. The waiters its permits go to are kept for its owner
// (Handed).

// Release gives back everything p holds, in reverse order of acquisition,
// and takes the task out of the counts. Each count drops before its permit
// is given back, so a count never exceeds its limit. A permit some task
// waits for is handed to it. The caller then owns that task, and gets it
// from Handed. A queue's door the task holds is passed on (see TakeDoor)
// once the slot is back. Release is a no-op the second time, and must not
// be called while the task is in a line.
func (p *Permits[T]) Release() {
	// Its blocked caller gives up, or walks on to wait elsewhere. A walk
	// turned away keeps a nudge's door: its caller waits again (Block).
	if p.flags&doors != 0 || p.flags&(nudged|quietRelease) == nudged {
		d := p.TakeDoor()
		p.release()
		d.Pass()
		return
	}
	p.release()
}

func (p *Permits[T]) release() {
	if !p.Holds() { // nothing held, nor counted: released already, or never walked
		return
	}
	g := p.group
	gl := g.global
	x := p.x()
	if p.held == heldGlobal|heldBulkhead|heldConc|countedRunning && !gl.fair && p.plainAbove(x) {
		p.giveAll(g, gl, x)
		return
	}
	p.unhand() // before the layer's permit is given back
	had := p.held
	p.stopWaiting()
	if p.held&countedRunning != 0 {
		gl.runningOut(p)
		if x != nil {
			p.countRunning(x, -1)
		}
	}
	var depth uint8
	if x != nil {
		depth = g.depth()
	}
	for i := len(gl.walk) - 1; i >= 0; i-- {
		y := &gl.walk[i]
		for lv := y.top(depth); lv > 0; lv-- { // each ancestor's layer, and its slot
			a := g.ancestor(lv)
			if n := p.giveUp(x, a, y.bit, lv); n > 0 {
				p.keep(a.lineOf(y.bit).release(p, n))
				p.nudge(&a.queue, y.bit)
			}
		}
		if y.drop {
			p.dropSlot(g.queueOf(y.slot), y.slot)
		}
		switch {
		case p.held&y.bit == 0:
		case y.bit == heldGlobal:
			gl.giveGlobal(p, x)
		default:
			p.releaseLine(g.lineOf(y.bit), y.bit, x)
		}
	}
	if layers := had & (heldGlobal | heldBulkhead | heldConc); layers != 0 {
		p.nudge(&g.queue, layers)
	}
	// Only under fair share are callers watched (WatchGlobal), so no
	// other release reads the watch.
	if had&heldGlobal != 0 && gl.fair && gl.watch.n.Load() != 0 {
		gl.nudgeWatched(&g.queue, p.flags&quietRelease != 0) // nudged just above
	}
	p.held = 0
}

// stop ends a walk that did not reach Admitted. A task that may not wait
// gives back every permit and slot before it is rejected. The line of
// layer bit turned it away (pauseBit: a pause line), which its blocked
// caller keeps as its cause (turnedAway). A blocked caller's walk gives
// back quietly (see quiet.go). Any other gives back as a task's end does.
// A caller blocked on a queue of no slots may have been turned away at a
// permit it held for a moment, or was handed. Such a walk comes once for
// each Submit, and for each hand-off.
func (p *Permits[T]) stop(out Outcome, bit uint8, reason string) (Outcome, string) {
	if out != Rejected {
		return out, "" // a line may own p by now
	}
	p.turnedAway(bit)
	if p.flags&pause != 0 {
		p.flags |= quietRelease
		if testHookTurnedAway != nil {
			testHookTurnedAway()
		}
	}
	p.Release()
	p.flags &^= quietRelease
	return out, reason
}

// testHookTurnedAway, if set, runs in stop as a blocked caller's walk,
// turned away, is about to give back what it took. Tests set it to act as
// another goroutine there.
var testHookTurnedAway func()

// releaseLine gives back p's permit of its group's line l (bit). x is
// p's Ext, nil for a plain task.
func (p *Permits[T]) releaseLine(l *line[T], bit uint8, x *Ext) {
	if p.held&bit != 0 {
		p.held &^= bit
		n := int64(1)
		if x != nil {
			p.group.global.counted(x, p.group, bit, 0, -1)
			n = x.amount(bit, 0) + l.dropWhole(p, x)
		}
		p.keep(l.release(p, n))
	}
}

// nudgeTurn nudges the queues of no slots of g and of its ancestors, once
// g's turn is free again. A fresh walk that waited for the turn at a free
// permit, with no slot to wait on, was turned away (see yields). Its
// caller, if it blocked, walks again.
func (g *Group[T]) nudgeTurn() {
	for a := g; a != nil; a = a.up() {
		if a.queue.limit.Load() == 0 {
			g.global.handSlots(a.queue.nudge(), 0)
		}
	}
}

// nudge is for p having given back permits of the layers in mask, which
// queue q's tasks wait for. If q has no slots, it wakes q's first blocked
// caller (see slots.nudge). A blocked caller's walk turned away gives back
// quietly. It wakes only a caller turned away at one of those layers (see
// quiet.go).
func (p *Permits[T]) nudge(q *slots[T], mask uint8) {
	if q.limit.Load() == 0 { // most queues have slots: kept small enough to inline
		p.nudgeNow(q, mask)
	}
}

// nudgeNow is nudge for a queue of no slots.
func (p *Permits[T]) nudgeNow(q *slots[T], mask uint8) {
	var w *Permits[T]
	if p.flags&quietRelease != 0 {
		w = q.quiet(mask)
	} else {
		w = q.nudge()
	}
	p.group.global.handSlots(w, 0)
}

// giveUp clears p's hold on ancestor a's layer bit at level lv (0: its own
// group), with its queue slot there if it waits at an ancestor's. It takes
// p out of the counts there. It returns the permits to give back to the
// layer, none if p held none there. x is p's Ext, nil for a plain task.
func (p *Permits[T]) giveUp(x *Ext, a *Group[T], bit, lv uint8) int64 {
	h := &p.held
	if lv > 0 {
		h = &x.anc[lv-1]
		p.dropSlotAt(a, h)
	}
	if *h&bit == 0 {
		return 0
	}
	*h &^= bit
	if lv == 0 {
		p.unhand()
	}
	if x != nil {
		p.group.global.countLayer(p.group, x, a, bit, lv, -1)
	}
	return x.amount(bit, lv) + a.lineOf(bit).dropWhole(p, x)
}

// Handed returns, one at a time, the tasks that this task's releases handed
// a permit to, or nil when there are none left. Each is out of its line and
// owned by the caller, who must call its Resume.
func (p *Permits[T]) Handed() *T {
	w := p.prev // p is in no line: prev heads the chain
	if w == nil {
		return nil
	}
	p.prev, w.next = w.next, nil
	return w.task()
}

// HasHanded reports whether Handed has a task to return.
func (p *Permits[T]) HasHanded() bool { return p.prev != nil }

// PutBack puts t, just returned by Handed, back at the head of the chain.
func (p *Permits[T]) PutBack(t *T) {
	w := permitsOf(t)
	w.next, p.prev = p.prev, w
}

// Adopt moves the tasks q's releases handed a permit to over to p, whose
// Handed then returns them too. The caller must own both. p may be a
// Permits of no task, which only holds them.
func (p *Permits[T]) Adopt(q *Permits[T]) {
	p.keep(q.prev)
	q.prev = nil
}

// keep puts a chain of handed waiters ahead of p's, in its order: the
// order their line served them, which Handed returns them in.
func (p *Permits[T]) keep(chain *Permits[T]) {
	if chain == nil {
		return
	}
	tail := chain
	for tail.next != nil {
		tail = tail.next
	}
	tail.next, p.prev = p.prev, chain
}
