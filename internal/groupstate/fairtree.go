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
// costs the number of siblings it passes (BenchmarkFairTree).

// fairNode is a group's place in the tree mode of the fair queue. It is
// guarded by the global line's mu, but for below.
type fairNode[T any] struct {
	pending int         // tasks of its subtree in the queue
	kids    []*Group[T] // its children with pending tasks, in the order they got some
	at      int         // its index in its parent's kids, or in tops
}

// runFair counts n global permits more (or fewer, n < 0) held by running
// tasks of g, in g and in each ancestor's subtree count.
func runFair[T any](g *Group[T], n int64) {
	g.fair.running.Add(n)
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
			list := q.siblings(g)
			f.at = len(*list)
			*list = append(*list, g)
		case was > 0 && f.pending == 0:
			list := q.siblings(g)
			*list = append((*list)[:f.at], (*list)[f.at+1:]...)
			for i := f.at; i < len(*list); i++ {
				(*list)[i].fair.node.at = i
			}
		}
	}
}

// siblings returns the list g stands in while it has work.
func (q *fairQueue[T]) siblings(g *Group[T]) *[]*Group[T] {
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
func fairest[T any](gs []*Group[T], own *Group[T]) *Group[T] {
	best := own
	var run, w int64
	if own != nil {
		run, w = own.fair.running.Load(), own.fair.weight.Load()
	}
	for _, g := range gs {
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
