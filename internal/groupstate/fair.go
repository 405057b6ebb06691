package groupstate

import "sync/atomic"

// fairLine is the global layer under fair-share isolation: a count of
// permits against a limit that may change, and the tasks that hold their
// group's permits and wait for a global one.
//
// A permit given back while tasks wait goes to the group with the fewest
// running tasks per weight (running/weight, compared exactly), ties to the
// group whose first waiting task joined first; within a group, tasks are
// served in the order they joined.
//
// The waiting tasks form one line in the order they joined, chained per
// group as the FIFO line under IsolationOff is. No group runs fewer than
// none, so the first task in the line whose group runs none is the one to
// serve: when it is near the head, serving costs what a FIFO line costs
// (BenchmarkW2Groups1000 of the benchmarks module). Otherwise fairOrder
// decides: it is built from the line, oldest first, and kept for a while
// (see toOrder).
//
// As with line, nothing is locked while nobody waits. A group's running
// count, part of its key, changes without the lock when the line looked
// empty; whoever changes it looks again afterwards and, if a task joined
// meanwhile, fixes the group's place under the lock.
type fairLine[T any] struct {
	// lock is the line of waiting tasks, chained per group; its limit,
	// waiting count (written under its mu) and held permits are the fair
	// line's. Its mu, which waiters lock to leave (see waiter.leave),
	// guards the rest.
	lock   line[T]
	order  fairOrder[T] // in use while lock.slow
	credit int          // tasks to serve from order before it may be dropped
	mixed  bool         // a task of another priority than the default joined; guarded by lock.mu
}

// headScan bounds how far from the head nextLocked looks for a group that
// runs none.
const headScan = 8

func newFairLine[T any](limit int) *fairLine[T] {
	f := new(fairLine[T])
	f.lock.limit.Store(int64(limit))
	f.lock.fair = f
	f.lock.chained = true
	return f
}

// fairQueue is one group's part of the fair line; guarded by its mu but
// for the atomics.
type fairQueue[T any] struct {
	running    atomic.Int64
	weight     atomic.Int64
	seq        uint32    // its first waiting task's, while in order
	index      int       // in order's heap, or its tier; -1 when not in order
	prev, next *Group[T] // in its tier
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

// refix puts g in its place after its running count changed without the
// lock, if tasks wait.
func (f *fairLine[T]) refix(g *Group[T]) {
	if f.lock.waiting.Load() != 0 {
		f.lock.mu.Lock()
		f.fixLocked(g)
		f.lock.mu.Unlock()
	}
}

// join is line.join for w, a task of g.
func (f *fairLine[T]) join(w *waiter[T], g *Group[T]) (acquired bool) {
	f.lock.mu.Lock()
	defer f.lock.mu.Unlock()
	f.lock.waiting.Add(1)
	if f.lock.head == nil && f.take() {
		f.lock.waiting.Add(-1)
		g.fair.running.Add(1)
		return true
	}
	w.seq = f.lock.seq
	f.lock.seq++
	f.mixed = f.mixed || w.prio != PriorityDefault
	first := g.ghead == nil
	f.lock.appendLocked(w)
	if first && f.lock.slow { // else toOrder finds g when it walks the line
		g.fair.seq = w.seq
		f.order.add(g)
	}
	return false
}

// toOrder puts every waiting group in order, walking the line from its
// head so that each group enters with its first task's seq. The order is
// kept until the line empties, or until it has served as many tasks as
// the walk visited and a group that runs none comes first again: so the
// walk, and dropping the order, cost each task served O(1).
func (f *fairLine[T]) toOrder() {
	f.lock.slow = true
	f.credit = 0
	for w := f.lock.head; w != nil; w = w.next {
		f.credit++
		if g := w.owner.group; g.fair.index < 0 {
			g.fair.seq = w.seq
			f.order.add(g)
		}
	}
}

// dropOrder takes every group out of order.
func (f *fairLine[T]) dropOrder() {
	for f.order.len() > 0 {
		f.order.remove(f.order.first())
	}
	f.lock.slow = false
}

// fixLocked puts g, if it has a waiting task and the order is in use, in
// its place after its running count or weight changed.
func (f *fairLine[T]) fixLocked(g *Group[T]) {
	if f.lock.slow && g.ghead != nil {
		f.order.fix(g)
	}
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
	if f.lock.head != nil && f.lock.held.load() <= f.lock.limit.Load() {
		return f.popLocked()
	}
	f.lock.held.give(1)
	return f.grantLocked()
}

// grant is line.grant.
func (f *fairLine[T]) grant() *waiter[T] {
	f.lock.mu.Lock()
	defer f.lock.mu.Unlock()
	return f.grantLocked()
}

// setWeight changes g's weight and its place.
func (f *fairLine[T]) setWeight(g *Group[T], w int) {
	f.lock.mu.Lock()
	defer f.lock.mu.Unlock()
	g.fair.weight.Store(int64(w))
	f.fixLocked(g)
}

func (f *fairLine[T]) grantLocked() *waiter[T] {
	var c chain[T]
	for f.lock.head != nil && f.take() {
		c.add(f.popLocked())
	}
	return c.head
}

// popLocked takes the first task of the fairest group out of the line and
// counts it running; the permit is the caller's to give.
func (f *fairLine[T]) popLocked() *waiter[T] {
	w := f.nextLocked()
	w.owner.group.fair.running.Add(1) // before removeLocked, which places the group once
	f.removeLocked(w)
	return w
}

// nextLocked returns the task to serve of the fairest group: the group of
// the first in line that runs none, if one is within headScan of the head;
// otherwise the order's (see toOrder).
func (f *fairLine[T]) nextLocked() *waiter[T] {
	if f.lock.slow {
		if f.credit--; f.credit >= 0 || f.order.first().fair.running.Load() != 0 {
			return f.bestOf(f.order.first())
		}
		f.dropOrder()
	}
	w := f.lock.head
	for i := 0; w != nil && i <= headScan; i, w = i+1, w.next {
		if w.owner.group.fair.running.Load() == 0 {
			return f.bestOf(w.owner.group)
		}
	}
	f.toOrder()
	return f.bestOf(f.order.first())
}

// bestOf returns g's task to serve once g is chosen: its first of the
// highest priority. A group's tasks here hold its concurrency permits, so
// there are at most its limit of them to look at, and only once tasks of
// more than one priority have joined.
func (f *fairLine[T]) bestOf(g *Group[T]) *waiter[T] {
	best := g.ghead
	if f.mixed {
		for p := best.wnext; p != nil; p = p.wnext {
			if p.w.prio < best.w.prio {
				best = p
			}
		}
	}
	return &best.w
}

// removeLocked takes w out of the line.
func (f *fairLine[T]) removeLocked(w *waiter[T]) {
	g := w.owner.group
	wasFirst := g.ghead == w.owner
	f.lock.removeLocked(w)
	switch {
	case g.ghead != nil:
		if wasFirst && f.lock.slow {
			g.fair.seq = g.ghead.w.seq // a new first task: its seq decides ties
			f.order.fix(g)
		}
	case f.lock.slow:
		f.order.remove(g)
		f.lock.slow = f.order.len() != 0
	}
}

// takeGroup takes every waiter of g out of the line and appends it to ws.
func (f *fairLine[T]) takeGroup(g *Group[T], ws []*waiter[T]) []*waiter[T] {
	if f.lock.waiting.Load() == 0 {
		return ws
	}
	f.lock.mu.Lock()
	defer f.lock.mu.Unlock()
	for p := g.ghead; p != nil; p = g.ghead {
		f.removeLocked(&p.w)
		ws = append(ws, &p.w)
	}
	return ws
}
