package groupstate

import "sync/atomic"

// fairQueue is the global line's queue under fair-share isolation: the
// tasks that hold their group's permits and wait for a global one.
//
// A permit given back while tasks wait goes to the group with the fewest
// running tasks per weight (running/weight, compared exactly), ties to the
// group whose first waiting task joined first; within a group, to its
// first waiting task of the highest priority.
//
// Each group's waiting tasks are chained in the order they joined, from
// Group.chain; the groups with a waiting task are kept in that order of
// choice, a heap (fairHeap). So serving a task costs O(log groups), where
// the groups are those waiting, whatever the depth of their lines.
//
// A group's running count, part of its key, changes without the lock when
// the line looked empty (Global.started); whoever changes it looks again
// afterwards and, if a task joined meanwhile, fixes the group's place
// under the lock. A release fixes it under the lock (gave).
type fairQueue[T any] struct {
	order fairHeap[T]
	seq   uint32 // joins so far, modulo 2^32
	mixed bool   // a task of another priority than the default joined
}

// fairGroup is one group's part of the fair queue; guarded by the global
// line's mu but for the atomics.
type fairGroup struct {
	running atomic.Int64
	weight  atomic.Int64
	seq     uint32 // its first waiting task's, while it has one
	index   int    // in the order's heap; -1 when it has no waiting task
}

func (q *fairQueue[T]) empty() bool { return len(q.order) == 0 }

func (q *fairQueue[T]) push(w *waiter[T]) {
	p := w.owner
	g := p.group
	w.seq = q.seq
	q.seq++
	q.mixed = q.mixed || w.prio != PriorityDefault
	first := g.chain.head == nil
	g.chain.linkAfter(w, g.chain.tail, byGroup)
	if first {
		g.fair.seq = w.seq
		q.order.push(g)
	}
}

// pushFront puts w first among its group's tasks, in the group's place.
func (q *fairQueue[T]) pushFront(w *waiter[T]) {
	g := w.owner.group
	if g.chain.head == nil {
		q.push(w)
		return
	}
	w.seq = g.fair.seq
	g.chain.linkAfter(w, nil, byGroup)
}

// pop takes out the chosen group's task and counts it running.
func (q *fairQueue[T]) pop() *waiter[T] {
	g := q.order[0].g
	w := q.bestOf(g)
	g.fair.running.Add(1) // before remove, which places the group once
	q.remove(w)
	return w
}

// remove takes w out of its group's chain and puts the group in its place.
func (q *fairQueue[T]) remove(w *waiter[T]) {
	g := w.owner.group
	wasFirst := g.chain.head == w
	g.chain.unlink(w, byGroup)
	if g.chain.head == nil {
		q.order.remove(g.fair.index)
		return
	}
	if wasFirst {
		g.fair.seq = g.chain.head.seq // a new first task: its seq decides ties
	}
	q.order.fix(g.fair.index)
}

// gave puts p's group, which runs one task fewer, in its place.
func (q *fairQueue[T]) gave(p *Permits[T]) { q.fix(p.group) }

// fix puts g in its place after its running count or weight changed, if
// it has a waiting task.
func (q *fairQueue[T]) fix(g *Group[T]) {
	if i := g.fair.index; i >= 0 {
		q.order.fix(i)
	}
}

func (q *fairQueue[T]) each(g *Group[T], f func(w *waiter[T])) {
	if g != nil {
		g.chain.each(byGroup, f)
		return
	}
	for _, g := range q.order.groups() {
		g.chain.each(byGroup, f)
	}
}

func (q *fairQueue[T]) oldest(g *Group[T]) int64 { return g.oldestChained() }

// heads calls f with every waiting task of g: they hold its concurrency
// permits, so there are at most its limit of them.
func (q *fairQueue[T]) heads(g *Group[T], f func(w *waiter[T])) { g.chain.each(byGroup, f) }

// bestOf returns g's task to serve once g is chosen: its first of the
// highest priority. A group's tasks here hold its concurrency permits, so
// there are at most its limit of them to look at, and only once tasks of
// more than one priority have joined.
func (q *fairQueue[T]) bestOf(g *Group[T]) *waiter[T] {
	best := g.chain.head
	if q.mixed {
		for w := best.chained.next; w != nil; w = w.chained.next {
			if w.prio < best.prio {
				best = w
			}
		}
	}
	return best
}
