package groupstate

import "math/bits"

// Once a group with a parent waits in the fair queue, the queue chooses
// top-down (tree mode). It takes the fairest top-level group with a task
// waiting in its subtree. Inside it, it takes the fairest of the group's
// own tasks and its children with work, and so on down. Fairest is the
// fewest global permits held by the running tasks of a subtree per weight.
// A group's own tasks count with its own running and weight. So a tenant's
// share does not grow with the number of keys it spreads its tasks over.
// Ties go to the group that has had work longest.
//
// Each group with work is listed in its parent's kids, or in tops, in the
// order it got work. The choice scans those lists along one path, so it
// costs the number of siblings it passes, up to the first that runs none
// (BenchmarkW2Tree of the benchmarks module).

// fairNode is a group's place in the tree mode of the fair queue. It is
// guarded by the global line's mu.
type fairNode[T any] struct {
	pending    int        // tasks of its subtree in the queue
	kids       kinList[T] // its children with pending tasks, in the order they got some
	prev, next *Group[T]  // in its parent's kids, or in tops
}

// kinList is a list of groups with work, linked through their fairNode.
type kinList[T any] struct{ head, tail *Group[T] }

func (l *kinList[T]) push(g *Group[T]) {
	n := &g.fair.node
	n.prev, n.next = l.tail, nil
	if l.tail != nil {
		l.tail.fair.node.next = g
	} else {
		l.head = g
	}
	l.tail = g
}

func (l *kinList[T]) remove(g *Group[T]) {
	n := &g.fair.node
	if n.prev != nil {
		n.prev.fair.node.next = n.next
	} else {
		l.head = n.next
	}
	if n.next != nil {
		n.next.fair.node.prev = n.prev
	} else {
		l.tail = n.prev
	}
	n.prev, n.next = nil, nil
}

// runFair counts n global permits more (or fewer, n < 0) held by running
// tasks of g, in g and in each ancestor's subtree count.
func runFair[T any](g *Group[T], n int64) {
	g.fair.running.Add(n)
	if g.kin.Load() != nil {
		runBelow(g, n)
	}
}

// runBelow counts n in the subtree counts of g's ancestors.
func runBelow[T any](g *Group[T], n int64) {
	for a := g.up(); a != nil; a = a.up() {
		a.fair.below.Add(n)
	}
}

// subtreeRunning returns the global permits held by running tasks of g's
// subtree.
func (f *fairGroup[T]) subtreeRunning() int64 { return f.running.Load() + f.below.Load() }

// toTree switches q to tree mode. The waiting tasks are counted in again.
func (q *fairQueue[T]) toTree() {
	q.dropOrder()
	q.passed, q.tree = nil, true
	for w := q.all.head; w != nil; w = w.next {
		q.pend(w.group, 1)
	}
}

// pend counts n tasks of g more (or fewer) in the queue, listing g and its
// ancestors with work, or taking out those left with none.
func (q *fairQueue[T]) pend(g *Group[T], n int) {
	for ; g != nil; g = g.up() {
		f := &g.fair.node
		was := f.pending
		f.pending += n
		switch {
		case was == 0 && f.pending > 0:
			q.siblings(g).push(g)
		case was > 0 && f.pending == 0:
			q.siblings(g).remove(g)
		}
	}
}

// siblings returns the list g stands in while it has work.
func (q *fairQueue[T]) siblings(g *Group[T]) *kinList[T] {
	if p := g.up(); p != nil {
		return &p.fair.node.kids
	}
	return &q.tops
}

// nextTree returns the task to serve, chosen top-down.
func (q *fairQueue[T]) nextTree() *Permits[T] {
	g := fairest(q.tops, nil)
	for {
		var own *Group[T]
		if g.chain.head != nil {
			own = g
		}
		k := fairest(g.fair.node.kids, own)
		if k == own {
			return q.bestOf(g)
		}
		g = k
	}
}

// fairest returns the group of gs, or own, whose subtree runs the fewest
// permits per weight. own counts its own running tasks alone. The first
// listed wins a tie, and own wins over the list. So the scan stops at the
// first that runs none.
func fairest[T any](gs kinList[T], own *Group[T]) *Group[T] {
	best := own
	var run, w int64
	if own != nil {
		run, w = own.fair.running.Load(), own.fair.weight.Load()
	}
	for g := gs.head; g != nil; g = g.fair.node.next {
		if best != nil && run == 0 {
			break // none runs fewer than none
		}
		r, v := g.fair.subtreeRunning(), g.fair.weight.Load()
		if best == nil || fewer(r, v, run, w) {
			best, run, w = g, r, v
		}
	}
	return best
}

// fewer reports whether a/aw < b/bw, exactly.
func fewer(a, aw, b, bw int64) bool {
	hi1, lo1 := bits.Mul64(uint64(max(a, 0)), uint64(bw))
	hi2, lo2 := bits.Mul64(uint64(max(b, 0)), uint64(aw))
	return hi1 < hi2 || hi1 == hi2 && lo1 < lo2
}
