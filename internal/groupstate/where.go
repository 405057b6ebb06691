package groupstate

// Which limits a waiting task may wait for, as Where names them.
const (
	WaitPaused      = "paused"      // its group's pause
	WaitBulkhead    = "bulkhead"    // its group's bulkhead
	WaitConcurrency = "concurrency" // its group's concurrency limit
	WaitGlobal      = "global"      // the global cap
)

// Where reports the limit p's task waits for, the key of the group whose
// limit it is ("" for the global cap), and how many waiters of that line
// are served before it, as the line stands now. The group is the task's
// own, or an ancestor's. It reports false if the task waits in no line. It
// walks the line under its lock, so it is for explaining, not for the hot
// path. It is safe from any goroutine.
//
// A paused task waits first at the pause nearest it. A new task of its
// group would join that one (waitsAt). It may stand in an ancestor's
// pause line, if its group was paused after it joined there. Then the
// pause named is its group's, and so are the tasks counted (pausedAhead).
// A fresh walk waiting for its group's turn is in no line (turnWhere).
func (p *Permits[T]) Where() (limit, group string, ahead int, ok bool) {
	l := p.line.Load()
	if l == nil {
		return p.turnWhere()
	}
	r := l.lock()
	if p.line.Load() != l { // served or gone meanwhile
		r.unlock()
		return "", "", 0, false
	}
	// p.bit and the level were set before p joined l, under this lock.
	a := p.group.ancestor(p.waitLevel())
	switch p.bit {
	case pauseBit:
		limit = WaitPaused
		if b := p.group.waitsAt(-1, nil); b != nil {
			a = b
			r.unlock()
			ahead = a.pausedAhead(p)
			if p.line.Load() != l { // moved on meanwhile
				return "", "", 0, false
			}
			return limit, a.key, ahead, true
		}
	case heldBulkhead:
		limit = WaitBulkhead
	case heldConc:
		limit = WaitConcurrency
	default:
		limit, a = WaitGlobal, nil
	}
	if a != nil {
		group = a.key
	}
	ahead = r.q().ahead(p)
	r.unlock()
	return limit, group, ahead, true
}

// pausedAhead counts the tasks served before p at g's pause. For them,
// as for p, it is the first pause on their path (waitsAt). They wait in
// g's pause line, or in an ancestor's they joined before g was paused.
// Each line is walked under its own lock, one at a time.
func (g *Group[T]) pausedAhead(p *Permits[T]) int {
	n := 0
	for a := g; a != nil; a = a.up() {
		pl := a.pauseLine.Load()
		if pl == nil {
			continue
		}
		r := pl.lock()
		r.q().each(nil, func(w *Permits[T]) {
			if w != p && servedBefore(w, p) && w.group.waitsAt(-1, nil) == g {
				n++
			}
		})
		r.unlock()
	}
	return n
}

// ahead counts the waiters served before w, which waits in q: those of a
// higher priority, and those of its own that joined first.
func (q *fifo[T]) ahead(w *Permits[T]) int { return q.aheadAfter(w, nil) }

// aheadAfter is ahead where chosen, if not nil, waits in q and is served
// first whatever its priority. A costly task the fair choice fell on stays
// chosen until it starts (kidQueue).
func (q *fifo[T]) aheadAfter(w, chosen *Permits[T]) int {
	if w == chosen {
		return 0
	}
	n := 0
	if chosen != nil {
		n++
	}
	for p := range q.lists {
		for x := q.lists[p].head; x != nil && x != w; x = x.links.next {
			if x != chosen {
				n++
			}
		}
		if uint8(p) == w.prio {
			return n
		}
	}
	return n
}

// ahead counts the waiters of w's group served before w. The fair queue
// serves groups in turn, so those of other groups are not said to be ahead.
// The task the fair choice fell on is served first.
func (q *fairQueue[T]) ahead(w *Permits[T]) int {
	if w == q.chosen {
		return 0
	}
	n, past := 0, false
	for x := w.group.chain.head; x != nil; x = x.chained.next {
		switch {
		case x == w:
			past = true
		case x == q.chosen, x.prio < w.prio, x.prio == w.prio && !past:
			n++
		}
	}
	return n
}

// turnWhere is Where for a fresh walk waiting for its group's turn. It
// waits for the first layer it holds no permit of. Ahead counts the task
// walking on and those whose turn comes first. It reports false if p
// does not wait for its turn, or was handed a permit.
func (p *Permits[T]) turnWhere() (limit, group string, ahead int, ok bool) {
	t := p.group.turns.Load()
	if t == nil {
		return "", "", 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ahead = 1 // the walker
	for w := t.parked.head; w != p; w = w.links.next {
		if w == nil {
			return "", "", 0, false
		}
		ahead++
	}
	if p.bit != turnBit { // handed: it moves from one line to the next
		return "", "", 0, false
	}
	bit, lv, ok := p.turnLayer()
	switch {
	case !ok:
		return "", "", 0, false
	case bit == heldGlobal:
		return WaitGlobal, "", ahead, true
	case bit == heldBulkhead:
		limit = WaitBulkhead
	default:
		limit = WaitConcurrency
	}
	return limit, p.group.ancestor(lv).key, ahead, true
}

// turnLayer returns the layer p, a fresh walk waiting for its group's
// turn, waits before. That is the first it holds no permit of, at the
// level it stopped at. Its owner wrote what it reads before it parked, under the
// turns' mu, which the caller holds.
func (p *Permits[T]) turnLayer() (bit, lv uint8, ok bool) {
	var depth uint8
	x := p.x()
	if x != nil {
		depth = p.group.depth()
	}
	lv = x.lvl()
	for i := range p.group.global.walk {
		y := &p.group.global.walk[i]
		if lv <= y.top(depth) && *p.heldAt(lv)&y.bit == 0 {
			return y.bit, lv, true
		}
	}
	return 0, 0, false
}
