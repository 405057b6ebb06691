package groupstate

// Once a group with a parent waits in the fair queue, the queue chooses
// top-down (tree mode). It takes the fairest top-level group with a task
// waiting in its subtree. Inside it, it takes the fairest of the group's
// own tasks and its children with work, and so on down. Fairest is the
// fewest global permits held by the running tasks of a subtree per weight.
// A group's own tasks count with its own running and weight. So a tenant's
// share does not grow with the number of keys it spreads its tasks over.
// Ties go to the one whose waiting task joined the line first.
//
// Each group with work is listed in its parent's kids, or in tops, and its
// own tasks in its kids, oldest waiter first (sharers). The choice scans
// those lists along one path, so it costs the number of siblings it
// passes, up to the first that runs none (BenchmarkW2Tree of the
// benchmarks module).

// fairNode is a group's place in the tree mode of the fair queue. It is
// guarded by the global line's mu.
type fairNode[T any] struct {
	pending int                  // tasks of its subtree in the queue
	kids    sharers[*Group[T]]   // its children with pending tasks, and own
	own     shareLink[*Group[T]] // its own tasks, in kids while it has any
	link    shareLink[*Group[T]] // in its parent's kids, or in tops
}

// runFair counts n global permits more (or fewer, n < 0) held by running
// tasks of g, in g and in each ancestor's subtree count.
func runFair[T any](g *Group[T], n int64) {
	g.fair.running.Add(n)
	if g.parent != nil {
		runBelow(g, n)
	}
}

// runFair counts p, which took its global permit, running in its group's
// share. It was counted handed (fairGroup.handed) until then, if a kidQueue
// of its group handed it a permit. It is counted running first, so a
// choice reading the two counts never finds it in neither.
func (p *Permits[T]) runFair() {
	runFair(p.group, p.amount(heldGlobal, 0))
	p.unhand()
}

// hand counts p, just handed a permit of layer bit of its own group by a
// kidQueue, in its group's handed count, unless it is in it already. It
// counts the permits p took there. A costly task keeps that number, for
// unhand.
func (p *Permits[T]) hand(bit uint8) {
	if p.held&countedHanded != 0 {
		return
	}
	p.held |= countedHanded
	n := int64(1)
	if x := p.x(); !x.costsOne() {
		n = x.amount(bit, 0)
		x.amt.handed = n
	}
	p.group.fair.handed.Add(n)
}

// unhand takes p out of its group's handed count, if it is in it.
func (p *Permits[T]) unhand() {
	if p.held&countedHanded == 0 {
		return
	}
	p.held &^= countedHanded
	n := int64(1)
	if x := p.x(); !x.costsOne() {
		n = x.amt.handed
	}
	p.group.fair.handed.Add(-n)
}

// runBelow counts n in the subtree counts of g's ancestors.
func runBelow[T any](g *Group[T], n int64) {
	for a := g.up(); a != nil; a = a.up() {
		a.fair.below.Add(n)
	}
}

// toTree switches q to tree mode. The waiting tasks are counted in again.
func (q *fairQueue[T]) toTree() {
	q.dropOrder()
	q.passed, q.tree = nil, true
	for w := q.all.head; w != nil; w = w.next {
		q.pend(w.group, 1)
	}
}

// pend counts n tasks of g more (or fewer) in the queue, in g and each
// ancestor. It lists g's own tasks, and each group up to the first that
// stays where it was, at the place of their oldest waiting task, or takes
// out those left with none. The head of g's chain is its oldest
// (chainList.put). The head of a group's kids is its subtree's.
func (q *fairQueue[T]) pend(g *Group[T], n int) {
	f := &g.fair.node
	var seq uint32
	if h := g.chain.head; h != nil {
		seq = h.seq
	}
	moved := f.kids.update(&f.own, g.chain.head != nil, seq)
	for ; g != nil; g = g.up() {
		f := &g.fair.node
		f.pending += n
		if !moved {
			continue // so its ancestors' lists are as they were
		}
		if f.pending > 0 {
			seq = f.kids.head.oldest
		}
		moved = q.siblings(g).update(&f.link, f.pending > 0, seq)
	}
}

// siblings returns the list g stands in while it has work.
func (q *fairQueue[T]) siblings(g *Group[T]) *sharers[*Group[T]] {
	if p := g.up(); p != nil {
		return &p.fair.node.kids
	}
	return &q.tops
}

// nextTree returns the task to serve, chosen top-down. At each level a
// group's own tasks count its own running tasks alone.
func (q *fairQueue[T]) nextTree() *Permits[T] {
	g := q.tops.fairest()
	for {
		k := g.fair.node.kids.fairest()
		if k == g {
			return q.bestOf(g)
		}
		g = k
	}
}
