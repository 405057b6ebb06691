package groupstate

import "encoding/binary"

// This file is the walk, and the walk back, of a task of cost one under
// IsolationOff where its layers are free. It is the loops of advance and
// release for that case, less what such a task needs none of. Under
// IsolationOff a task of cost one keeps no count of a layer
// (Global.counts, kidHeld). Its only counts are those of a running task
// (countRunning).
//
// BenchmarkWalk pays for them. A plain task's walk and walk back take
// 77 ns with takeAll and giveAll, 102 ns through advance's and release's
// loops. A task with a parent's take 181 ns with giveAll, 189 without (one
// CPU, 8 rounds each, interleaved).

// takeAll is the walk of a plain task (cost one, no parent: no Ext)
// holding nothing, under IsolationOff, in a group not paused. As the loop
// of advance does, it takes each layer of walks in turn while it is free,
// with nobody waiting and no task of its group walking on. It reports
// whether it took them all. If not, that loop goes on from there. It
// spares a Do 400 of 3 000 instructions (BenchmarkDoUncontended).
func (p *Permits[T]) takeAll(g *Group[T], gl *Global[T]) bool {
	for i, y := range gl.walk {
		if l := g.lineOf(y.bit); l.waiting.Load() != 0 || i > 0 && l.contested(g) || !l.take() {
			return false
		}
		p.held |= y.bit
	}
	p.held |= countedRunning
	gl.runningIn(p)
	return true
}

// takeRest is takeAll for a walk handed a permit (Resume), past the gate.
// The task costs one, and has Ext x (nil: plain) and depth ancestors. As
// the loop of advance does, it takes each layer of walks the task does not
// hold yet, at its group and then at each ancestor, nearest first. That is
// the one handed over, or one free with nobody waiting. It reports whether
// it took them all. If not, that loop goes on from there. A task handed a
// permit mostly finds the rest free: most tasks of W2 (benchmarks module)
// are handed a global permit.
func (p *Permits[T]) takeRest(g *Group[T], gl *Global[T], x *Ext, depth uint8) bool {
	for _, y := range gl.walk {
		h, a, top := &p.held, g, y.top(depth)
		for lv := uint8(0); ; lv++ {
			if *h&y.bit == 0 {
				handed := p.bit == y.bit && p.flags&granted != 0 && x.lvl() == lv
				if handed {
					p.flags &^= granted
				} else if l := a.lineOf(y.bit); l.waiting.Load() != 0 || !l.take() {
					return false
				}
				*h |= y.bit
				if y.bit == heldGlobal {
					gl.tookGlobal(p, handed)
				}
			}
			if lv == top {
				break
			}
			h, a = &x.anc[lv], a.up()
		}
	}
	return true
}

// giveAll is the release of a task of cost one that ran holding its
// permits and nothing else, under IsolationOff. It is release's loop for
// that case, with no slot to give back, and no count of a layer to keep
// (see Global.counts). x is the task's Ext, nil for a plain task. A task
// with a parent gives back its ancestors' permits too, each before its
// own group's (plainAbove). It spares a Do 220 of its 2 600 instructions
// (BenchmarkDoUncontended), and a task of W1 (benchmarks module) 260.
func (p *Permits[T]) giveAll(g *Group[T], gl *Global[T], x *Ext) {
	gl.runningOut(p)
	p.held = 0
	if x != nil {
		p.countRunning(x, -1)
		p.giveAbove(g, gl, x)
		return
	}
	for i := len(gl.walk) - 1; i >= 0; i-- {
		p.keep(g.lineOf(gl.walk[i].bit).release(p, 1))
	}
	p.nudge(gl.queue, heldGlobal)
	p.nudge(&g.queue, heldBulkhead|heldConc)
}

// giveAbove is giveAll for a task of Ext x, whose group has ancestors.
// Each ancestor's queue is nudged as its permit comes back, as release
// does. The plain task's loop is kept apart, so that it keeps no more
// values across its calls (W1).
func (p *Permits[T]) giveAbove(g *Group[T], gl *Global[T], x *Ext) {
	depth := g.depth()
	x.anc = [MaxAncestors]uint8{} // all it held there (plainAbove)
	for i := len(gl.walk) - 1; i >= 0; i-- {
		y := &gl.walk[i]
		for lv := y.top(depth); lv > 0; lv-- {
			a := g.ancestor(lv)
			p.keep(a.lineOf(y.bit).release(p, 1))
			p.nudge(&a.queue, y.bit)
		}
		p.keep(g.lineOf(y.bit).release(p, 1))
	}
	p.nudge(gl.queue, heldGlobal)
	p.nudge(&g.queue, heldBulkhead|heldConc)
}

// plainAbove reports whether p, of Ext x (nil: plain), costs one and
// holds the bulkhead and concurrency permits of each of its group's
// ancestors and nothing else there, as a running task does. A plain task
// does.
func (p *Permits[T]) plainAbove(x *Ext) bool {
	if x == nil {
		return true
	}
	each := uint64(0x0101010101010101) >> (64 - 8*uint(p.group.depth())) // a depth of 0 gives 0
	return x.amt == nil && binary.LittleEndian.Uint64(x.anc[:]) == each*uint64(heldBulkhead|heldConc)
}
