package groupstate

import "sync/atomic"

// fairQueue is the global line's queue under fair-share isolation. It holds
// the tasks that hold their group's permits and wait for a global one.
//
// A permit given back while tasks wait goes to the group whose running
// tasks hold the fewest global permits per weight (compared exactly).
// Ties go to the group whose first waiting task joined first. Within a
// group, the permit goes to its first waiting task of the highest
// priority.
//
// The waiting tasks stand in one list in the order they joined (all). Each
// group's tasks are also chained from Group.chain. Which group to serve is
// found in one of two regimes, each the cheapest for a shape of load.
//
//	regime     when                                  serving costs   evidence
//	head scan  a group that runs none is within      a FIFO pop      W2 at 2 CPUs: the head
//	           headScan past the last waiter                         almost always qualifies
//	           passed (no group runs fewer than
//	           none: it is the choice)
//	order      otherwise                             O(log groups)   exact for any weights
//
// The head scan resumes where it stopped (passed). So a task of a group
// that runs is passed over once, not at every hand-off while its group
// runs. Take a deep backlog whose head holds the groups of tasks that hold
// a permit but have not run yet. At one CPU these are the goroutines the
// submitter started. There, a short scan from the head mostly failed and
// built the order. Resuming, the head scan serves them. W2DeepBacklog
// (benchmarks module), fair/off, got faster for it, streamed and gated, at
// -cpu 1 and -cpu 2 (benchmarks/RESULTS.md).
// The longer scan costs W2's batches a little at -cpu 2, where every group
// but the head's mostly runs none. It costs nothing at -cpu 1.
//
// The order is fairOrder, a heap. It is built by walking all oldest
// first. It is kept until the queue empties, or until it has served as
// many tasks as the walk visited and a group that runs none comes first
// again. So the walk, and dropping the order, cost each task served O(1).
//
// A group's running count is part of its key. It changes without the lock
// when the line looked empty (Global.started). Whoever changes it looks
// again afterwards. If a task joined meanwhile, it fixes the group's place
// under the lock. A release fixes it under the lock (gave).
type fairQueue[T any] struct {
	all    list[T]      // every waiting task, in the order they joined
	order  fairOrder[T] // in use while slow
	slow   bool
	credit int    // tasks to serve from order before it may be dropped
	seq    uint32 // joins so far, modulo 2^32
	mixed  bool   // a task of another priority than the default joined
	tree   bool   // choose top-down among groups of groups (fairtree.go)
	tops   sharers[*Group[T]]

	// chosen is the task the fair choice fell on, until it is served or
	// leaves. A costly task stays chosen while it waits for permits to
	// free, so that cheaper tasks do not starve it.
	chosen *Permits[T]

	// passed is the last task the head scan passed over, nil for none. The
	// group of every task up to it runs a task, so the scan resumes after
	// it. A group that stops running with a task up to passed moves it back
	// before its first (fix). A task that leaves as passed hands it to the
	// one before (remove). It is unused while slow.
	passed *Permits[T]
}

// headScan bounds how many tasks past passed one hand-off looks at for a
// group that runs none. Beyond it the order takes over. A task is passed
// over once while its group runs, not at every hand-off.
const headScan = 64

// fairGroup is one group's part of the fair queue. It is guarded by the
// global line's mu, but for the atomics.
type fairGroup[T any] struct {
	running atomic.Int64 // global permits held by its running tasks
	below   atomic.Int64 // the same, of its descendants' (see runFair)
	// handed is the permits its own tasks took at a layer of the group
	// where a kidQueue handed them over, while they do not hold the global
	// one yet (Permits.hand). The kidQueue's own bucket counts them with
	// running. So a choice made while such a task walks on, on another
	// goroutine, sees it.
	handed atomic.Int64
	weight atomic.Int64
	seq    uint32      // its first waiting task's, while in order
	index  int         // in order's heap; -1 when not in it
	node   fairNode[T] // in tree mode (see fairtree.go)
}

// newFairGroup returns g's part of the fair queue, of weight weight (at
// least 1). In the fair tree g's share is the global permits its
// subtree's running tasks hold (runFair).
func newFairGroup[T any](g *Group[T], weight int) *fairGroup[T] {
	f := &fairGroup[T]{index: -1}
	f.weight.Store(int64(max(weight, 1)))
	f.node.link = shareLink[*Group[T]]{of: g, held: &f.running, more: &f.below, weight: &f.weight}
	f.node.own = shareLink[*Group[T]]{of: g, held: &f.running, more: &noMore, weight: &f.weight}
	return f
}

func (q *fairQueue[T]) empty() bool { return q.all.head == nil }

func (q *fairQueue[T]) push(w *Permits[T]) {
	g := w.group
	w.seq = q.seq
	q.seq++
	q.mixed = q.mixed || w.prio != PriorityDefault
	first := g.chain.head == nil
	q.all.linkAfter(w, q.all.tail, byLine)
	g.chain.put(w, false)
	if q.tree {
		q.pend(g, 1)
		return
	}
	if first && q.slow { // else toOrder finds g when it walks all
		g.fair.seq = w.seq
		q.order.add(g)
	}
}

// pushFront is push. Nothing waits after the global layer under fair
// share, so no lowered limit sends a task back to it.
func (q *fairQueue[T]) pushFront(w *Permits[T]) { q.push(w) }

// pop takes out the chosen group's task and counts it running, in the
// permits it holds.
func (q *fairQueue[T]) pop() *Permits[T] {
	w := q.peek()
	w.runFair() // before remove, which places the group once
	q.remove(w)
	return w
}

// peek returns the task the fair choice falls on, choosing it if none is.
func (q *fairQueue[T]) peek() *Permits[T] {
	if q.chosen == nil {
		q.chosen = q.next()
	}
	return q.chosen
}

func (q *fairQueue[T]) chooses() bool { return true }

func (q *fairQueue[T]) remove(w *Permits[T]) {
	g := w.group
	wasFirst := g.chain.head == w
	if w == q.chosen {
		q.chosen = nil
	}
	if w == q.passed {
		q.passed = w.prev
	}
	q.all.unlink(w, byLine)
	g.chain.unlink(w, byGroup)
	if q.tree {
		q.pend(g, -1)
		return
	}
	switch {
	case g.chain.head != nil:
		if wasFirst && q.slow {
			g.fair.seq = g.chain.head.seq // a new first task: its seq decides ties
			q.order.fix(g)
		}
	case q.slow:
		q.order.remove(g)
		q.slow = q.order.len() != 0
	}
}

// gave puts p's group, which runs one task fewer, in its place.
func (q *fairQueue[T]) gave(p *Permits[T]) { q.fix(p.group) }

// fix puts g in its place after its running count or weight changed, if
// it has a waiting task and the order is in use.
func (q *fairQueue[T]) fix(g *Group[T]) {
	h := g.chain.head
	switch {
	case h == nil, q.tree:
	case q.slow:
		q.order.fix(g)
	case q.passed != nil && g.fair.running.Load() == 0 && !joinedBefore(q.passed.seq, h.seq):
		q.passed = h.prev // h, at or before passed, is the choice again
	}
}

// next returns the task to serve of the fairest group. That is the group
// of the first in line that runs none, if one is within headScan past
// passed. Otherwise it is the order's first.
func (q *fairQueue[T]) next() *Permits[T] {
	if q.tree {
		return q.nextTree()
	}
	if q.slow {
		if q.credit--; q.credit >= 0 || q.order.first().fair.running.Load() != 0 {
			return q.bestOf(q.order.first())
		}
		q.dropOrder()
	}
	w := q.all.head
	if q.passed != nil {
		w = q.passed.next
	}
	for i := 0; w != nil && i <= headScan; i, w = i+1, w.next {
		if w.group.fair.running.Load() == 0 {
			return q.bestOf(w.group)
		}
		q.passed = w
	}
	q.toOrder()
	return q.bestOf(q.order.first())
}

// toOrder puts every waiting group in order, walking all from its head so
// that each group enters with its first task's seq.
func (q *fairQueue[T]) toOrder() {
	q.slow = true
	q.credit = 0
	q.passed = nil
	for w := q.all.head; w != nil; w = w.next {
		q.credit++
		if g := w.group; g.fair.index < 0 {
			g.fair.seq = w.seq
			q.order.add(g)
		}
	}
}

// dropOrder takes every group out of order.
func (q *fairQueue[T]) dropOrder() {
	for q.order.len() > 0 {
		q.order.remove(q.order.first())
	}
	q.slow = false
}

func (q *fairQueue[T]) each(g *Group[T], f func(w *Permits[T])) {
	if g != nil {
		g.chain.each(byGroup, f)
		return
	}
	q.all.each(byLine, f)
}

func (q *fairQueue[T]) oldest(g *Group[T]) int64 { return g.oldestChained() }

// heads calls f with every waiting task of g. They hold its concurrency
// permits, so there are at most its limit of them.
func (q *fairQueue[T]) heads(g *Group[T], _ func(w *Permits[T]) bool, f func(w *Permits[T])) {
	g.chain.each(byGroup, f)
}

// bestOf returns g's task to serve once g is chosen. It is its first of the
// highest priority. A group's tasks here hold its concurrency permits, so
// there are at most its limit of them to look at, and only once tasks of
// more than one priority have joined.
func (q *fairQueue[T]) bestOf(g *Group[T]) *Permits[T] {
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

// releaseFair gives back p's global permit under fair share. When that
// passes straight to a waiting task of p's group, it gives back p's
// concurrency permit too. That task's last layer is the global one. So it
// joins the global line under the lock the release holds anyway. It is not
// handed on only to take that lock again. W2DeepBacklog streamed, fair/off
// at -cpu 1, got faster for this. The task joins after p's global permit
// went to the fairest of the tasks already waiting. That is as if the
// permits were given back global first, which is the contract's order. It
// joins only if waiters are left, since it would wait behind them anyway.
// As for any task that joined a line, a stop asked for meanwhile is looked
// for afterwards (Global.stopped), and such a task leaves. A task that did
// not join, or left, is handed on as before. It holds the concurrency
// permit, for its owner's Resume to walk on.
func (p *Permits[T]) releaseFair() {
	g := p.group
	gl := g.global
	p.held &^= heldGlobal
	var w *Permits[T]
	// A waiter of a parent's line may be a descendant's, whose next layer
	// is not the global one: only a plain group's waiter is handed on here.
	if p.held&heldConc != 0 && p.flags&extended == 0 && g.kin.Load() == nil && gl.line.waiting.Load() != 0 { // else it would not join: release is lock-free
		w = g.conc.handOne(p)
	}
	if w == nil {
		x := p.x()
		p.keep(gl.line.release(p, x.amount(heldGlobal, 0)+gl.line.dropWhole(p, x)))
		return
	}
	p.held &^= heldConc
	w.held |= heldConc
	w.bit = heldGlobal
	handed, joined := gl.line.releaseJoin(p, w)
	p.keep(handed)
	// w leaves only the global line, holding the permit: a change of limits
	// may have moved it on meanwhile, giving the permit back, and its new
	// line owns it.
	if !joined || (gl.stopped(w.task()) && w.leaveFrom(gl.line, heldConc, 0)) {
		p.Adopt(w) // whom its leaving let through: w walks on and may join a line
		w.held &^= heldConc
		w.bit = heldConc
		p.keep(w) // its turn ends as its owner's Resume stops
		return
	}
	p.keep(g.passTurn()) // w's walk stopped in the global line
}
