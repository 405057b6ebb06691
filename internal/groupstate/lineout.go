package groupstate

import "slices"

// This file takes waiters out of a line other than in its order: a task
// that leaves, a sweep, a lowered limit sending tasks back, and the reads
// that find a group's oldest waiter.

// takeOut takes every waiter of g whose task matches out of the queue, and
// appends it to ws. A nil g means every waiter, and a nil match means all.
// The caller owns their tasks now.
func (l *line[T]) takeOut(g *Group[T], match func(p *Permits[T]) bool, ws []*Permits[T]) []*Permits[T] {
	if l.waiting.Load() == 0 {
		return ws
	}
	r := l.lock()
	defer r.unlock()
	q := r.q()
	q.each(g, func(w *Permits[T]) {
		if match == nil || match(w) {
			l.removeLocked(q, w)
			ws = append(ws, w)
		}
	})
	return ws
}

// takeOut is l.takeOut in a change of limits. A line some were taken out
// of is kept to settle: where costs differ, the permits free may fit those
// behind them now. So may a blocked caller's task, whose queue is kept to
// nudge (see left).
func (c *Changes[T]) takeOut(l *line[T], g *Group[T], match func(p *Permits[T]) bool, ws []*Permits[T]) []*Permits[T] {
	n := len(ws)
	ws = l.takeOut(g, match, ws)
	if len(ws) > n {
		c.lines = append(c.lines, l)
		c.left(ws[n])
	}
	return ws
}

// left keeps to nudge the queues a release of w's layer would nudge, for
// w, taken out of that layer's line without a permit. A blocked caller
// may have been turned away there because w was ahead of it. Where costs
// differ, the permits w waited for may be enough for the caller's task,
// and no release is coming to wake it. A pause line's task frees nothing.
func (c *Changes[T]) left(w *Permits[T]) {
	bit := w.bit & (heldGlobal | heldBulkhead | heldConc)
	if bit == 0 {
		return
	}
	gl := w.group.global
	q := &w.group.ancestor(w.waitLevel()).queue
	if bit == heldGlobal {
		q, c.watched = gl.queue, gl.fair
	}
	if q.limit.Load() == 0 && !slices.Contains(c.freed, q) {
		c.freed = append(c.freed, q)
	}
	c.gl = gl
}

// requeue puts ws, whose tasks hold a permit of l beyond a lowered limit,
// back in the queue ahead of their priority, in order. It takes their
// permits back. The change of limits grants them on (Changes.settle).
func (l *line[T]) requeue(ws []*Permits[T], bit uint8, a *Group[T]) {
	r := l.lock()
	defer r.unlock()
	for i := len(ws) - 1; i >= 0; i-- {
		w := ws[i]
		lv, x := w.levelOf(a), w.x()
		*w.heldAt(lv) &^= bit
		w.bit = bit
		if x != nil {
			x.level = lv
			w.group.global.countLayer(w.group, x, w.group.ancestor(lv), bit, lv, -1)
		}
		l.waiting.Add(1)
		l.pushLocked(r, w, true)
		l.held.giveN(x.amount(bit, lv) + l.dropWholeLocked(r, w))
	}
}

// oldest returns when g's oldest task in the line was submitted, or
// MaxInt64 if none waits.
func (l *line[T]) oldest(g *Group[T]) int64 {
	if l.waiting.Load() == 0 {
		return noWaiter
	}
	r := l.lock()
	defer r.unlock()
	return r.q().oldest(g)
}

// oldestOf returns when g's oldest task in l was submitted, or noWaiter.
// l is an ancestor's, shared by the tasks of its subtree.
func (l *line[T]) oldestOf(g *Group[T]) int64 {
	if l.waiting.Load() == 0 {
		return noWaiter
	}
	r := l.lock()
	defer r.unlock()
	first := int64(noWaiter)
	r.q().each(nil, func(w *Permits[T]) {
		if w.group == g {
			first = min(first, w.submitted)
		}
	})
	return first
}

// leave takes w out of the line it waits in and reports whether it did so.
// A fresh walk waiting for its turn leaves that wait (leaveTurn). If it
// did, the caller owns the task. It reports false if w is in no line, nor
// that wait. Then its task belongs to whoever took it out, who sees the reason for
// leaving when next it looks. It is safe from any goroutine.
func (w *Permits[T]) leave() bool {
	if l := w.line.Load(); l != nil {
		return w.leaveFrom(l, 0, 0)
	}
	return w.leaveTurn()
}

// leaveFrom is leave for a w that is to be taken out only if it still
// waits in l, holding every bit of slots. The waiters its leaving lets
// through are handed to w's owner, as its releases' are (Handed). The
// owner takes them before w joins a line again, whose links hold them.
// Only a layer's line hands any on. A task waiting for a resume, its
// turn or a queue's slot holds a bit of no layer (checked below).
func (w *Permits[T]) leaveFrom(l *line[T], slots, lv uint8) bool {
	var c Changes[T]
	defer c.nudgeFreed() // once l is unlocked
	r := l.lock()
	defer r.unlock()
	// w.held is read only while l owns w, so the line is checked first.
	if w.line.Load() != l || *w.heldAt(lv)&slots != slots { // taken out meanwhile, or moved on
		return false
	}
	l.removeLocked(r.q(), w)
	if w.bit&(heldGlobal|heldBulkhead|heldConc) != 0 {
		// Where costs differ, permits may be free while w waited for more:
		// those behind it may fit now, and no release is coming for them
		// (golang/go#37852). Its new owner carries them on (Handed). So
		// may a blocked caller's task (see left).
		w.keep(l.grantLocked(r))
		c.left(w)
	}
	return true
}

// The bits a task waits with outside the layers' lines are none of a
// layer's: a zero-length array, or this does not compile.
var _ [0]struct{} = [(pauseBit | turnBit | heldGlobalSlot | heldGroupSlot | causeBits) & (heldGlobal | heldBulkhead | heldConc)]struct{}{}
