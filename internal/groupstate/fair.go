package groupstate

import (
	"math"
	"sync/atomic"
)

// fairLine is the global layer under fair-share isolation: a count of
// permits against a limit that may change, and, per group, a line of the
// tasks that hold their group's permits and wait for a global one.
//
// A permit given back while tasks wait goes to the group with the fewest
// running tasks per weight (running/weight, compared exactly), ties to the
// group whose head joined first; within a group, tasks are served in the
// order they joined. fairOrder keeps the groups with a waiting task so.
//
// As with line, nothing is locked while nobody waits. A group's running
// count, part of its key in that order, changes without the lock when the
// line looked empty; whoever changes it looks again afterwards and, if a
// task joined meanwhile, fixes the group's place under the lock.
type fairLine[T any] struct {
	// lock is the line whose limit, waiting count (written under its mu)
	// and held permits are the fair line's. Its mu, which waiters lock to
	// leave (see waiter.leave), guards the rest; limit, waiting and mu
	// share a cache line, as in a FIFO line.
	lock  line[T]
	seq   uint32       // join counter, compared modulo 2^32
	order fairOrder[T] // groups with a waiting task
}

func newFairLine[T any](limit int) *fairLine[T] {
	f := new(fairLine[T])
	f.lock.limit.Store(int64(limit))
	f.lock.fair = f
	return f
}

// fairQueue is one group's part of the fair line; guarded by its mu.
type fairQueue[T any] struct {
	head, tail *waiter[T]
	index      int       // in order's heap, or its tier; -1 when the group has no waiter
	prev, next *Group[T] // in its tier
	seq        uint32    // the head's: order reads it without touching the head
	running    atomic.Int64
	weight     atomic.Int64
}

func (f *fairLine[T]) take() bool { return f.lock.take() }

// tryAcquire takes a permit for a task of g at once if nobody waits and one
// is free.
func (f *fairLine[T]) tryAcquire(g *Group[T]) bool {
	if f.lock.waiting.Load() != 0 || !f.take() {
		return false
	}
	g.fair.running.Add(1)
	f.refix(g)
	return true
}

// refix puts g in its place in the order after its running count changed
// without the lock, if tasks wait.
func (f *fairLine[T]) refix(g *Group[T]) {
	if f.lock.waiting.Load() != 0 {
		f.lock.mu.Lock()
		f.fixLocked(g)
		f.lock.mu.Unlock()
	}
}

func (f *fairLine[T]) fixLocked(g *Group[T]) {
	if g.fair.index >= 0 {
		f.order.fix(g)
	}
}

// join is line.join for w, a task of g.
func (f *fairLine[T]) join(w *waiter[T], g *Group[T]) (acquired bool) {
	f.lock.mu.Lock()
	defer f.lock.mu.Unlock()
	f.lock.waiting.Add(1)
	if f.order.len() == 0 && f.take() {
		f.lock.waiting.Add(-1)
		g.fair.running.Add(1)
		return true
	}
	q := &g.fair
	w.seq = f.seq
	f.seq++
	w.prev, w.next = q.tail, nil
	if q.tail == nil {
		q.head, q.seq = w, w.seq
	} else {
		q.tail.next = w
	}
	q.tail = w
	w.line.Store(&f.lock)
	if q.index < 0 {
		f.order.add(g)
	}
	return false
}

// release gives back the permit of a task of g, as line.release does, to
// the fairest waiting group.
func (f *fairLine[T]) release(g *Group[T]) *waiter[T] {
	g.fair.running.Add(-1)
	if f.lock.waiting.Load() == 0 {
		f.lock.held.give(1)
		if f.lock.waiting.Load() == 0 {
			return nil
		}
		f.lock.mu.Lock()
		defer f.lock.mu.Unlock()
		f.fixLocked(g)
		return f.grantLocked()
	}
	f.lock.mu.Lock()
	defer f.lock.mu.Unlock()
	f.fixLocked(g)
	if f.order.len() > 0 && f.lock.held.load() <= f.lock.limit.Load() {
		return f.popLocked()
	}
	f.lock.held.give(1)
	return f.grantLocked()
}

// setLimit is line.setLimit.
func (f *fairLine[T]) setLimit(n int) {
	f.lock.mu.Lock()
	f.lock.limit.Store(int64(n))
	f.lock.mu.Unlock()
}

// grant is line.grant.
func (f *fairLine[T]) grant() *waiter[T] {
	f.lock.mu.Lock()
	defer f.lock.mu.Unlock()
	return f.grantLocked()
}

// setWeight changes g's weight and its place in the order.
func (f *fairLine[T]) setWeight(g *Group[T], w int) {
	f.lock.mu.Lock()
	defer f.lock.mu.Unlock()
	g.fair.weight.Store(int64(w))
	f.fixLocked(g)
}

func (f *fairLine[T]) grantLocked() *waiter[T] {
	var c chain[T]
	for f.order.len() > 0 && f.take() {
		c.add(f.popLocked())
	}
	return c.head
}

// popLocked takes the head of the fairest group out of the line and counts
// it running; the permit is the caller's to give.
func (f *fairLine[T]) popLocked() *waiter[T] {
	g := f.order.first()
	w := g.fair.head
	g.fair.running.Add(1) // before removeLocked, which fixes g's place once
	f.removeLocked(g, w)
	return w
}

func (f *fairLine[T]) removeLocked(g *Group[T], w *waiter[T]) {
	q := &g.fair
	wasHead := q.head == w
	if w.prev == nil {
		q.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		q.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	w.line.Store(nil)
	f.lock.waiting.Add(-1)
	switch {
	case q.head == nil:
		f.order.remove(g)
	case wasHead:
		q.seq = q.head.seq
		f.fixLocked(g) // a new head: its seq decides ties
	}
}

// firstOf returns when g's task at the head of its line was submitted, or
// math.MaxInt64 if none waits.
func (f *fairLine[T]) firstOf(g *Group[T]) int64 {
	if f.lock.waiting.Load() == 0 {
		return math.MaxInt64
	}
	f.lock.mu.Lock()
	defer f.lock.mu.Unlock()
	if w := g.fair.head; w != nil {
		return w.owner.submitted
	}
	return math.MaxInt64
}

// takeGroup takes every waiter of g out of the line and appends it to ws.
func (f *fairLine[T]) takeGroup(g *Group[T], ws []*waiter[T]) []*waiter[T] {
	if f.lock.waiting.Load() == 0 {
		return ws
	}
	f.lock.mu.Lock()
	defer f.lock.mu.Unlock()
	for w := g.fair.head; w != nil; w = g.fair.head {
		f.removeLocked(g, w)
		ws = append(ws, w)
	}
	return ws
}

// sweep is line.sweep over the lines of the groups in the fair line.
func (f *fairLine[T]) sweep(match func(p *Permits[T]) bool, out []*T) []*T {
	if f.lock.waiting.Load() == 0 {
		return out
	}
	f.lock.mu.Lock()
	defer f.lock.mu.Unlock()
	gs := f.order.appendTo(nil)
	for _, g := range gs {
		for w := g.fair.head; w != nil; {
			next := w.next
			if match == nil || match(w.owner) {
				f.removeLocked(g, w)
				out = append(out, w.owner.owner)
			}
			w = next
		}
	}
	return out
}
