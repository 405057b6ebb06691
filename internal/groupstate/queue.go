package groupstate

import (
	"math"
	"math/bits"
)

// queue is a line's discipline. It decides where a waiter stands and which
// is served next. Its methods are called only under the mu of the line's
// waiters, never on the lock-free path. The line counts waiters and permits
// (see line).
//
//	discipline   used by                                     serves
//	fifo         group layers, a queue's blocked callers      priority, then arrival
//	globalFIFO   the global line under IsolationOff           priority, then arrival
//	fairQueue    the global line under fair share             fairest group, then its
//	                                                          highest priority, then arrival
//	kidQueue     a parent's layers under fair share           fairest child (or its own
//	                                                          tasks), then as fifo
//	pauseQueue   a group's pause line (pause.go)              priority, then submission
type queue[T any] interface {
	empty() bool
	// push puts w at its place, behind every waiter it does not pass.
	push(w *Permits[T])
	// pushFront puts w ahead of its priority, behind those there a line
	// serves first. A task a lowered limit sent back, or a blocked caller
	// woken without a slot, goes back to the head. Several put back one at
	// a time keep the order they are served in.
	pushFront(w *Permits[T])
	// pop takes out the waiter to serve next. The queue is not empty.
	pop() *Permits[T]
	// peek returns the waiter pop would take out. The queue is not empty.
	peek() *Permits[T]
	// chooses reports whether peek makes a choice that the queue keeps
	// until it is served (fair share: see fairQueue.chosen). The others
	// serve by priority, then arrival.
	chooses() bool
	// remove takes out w, which leaves.
	remove(w *Permits[T])
	// gave tells the queue that p gave back a permit of its line. Fair
	// share keeps groups in order of their running tasks.
	gave(p *Permits[T])
	// each calls f with every waiter of g, or every waiter if g is nil.
	// f may remove the waiter it is given.
	each(g *Group[T], f func(w *Permits[T]))
	// oldest returns when g's oldest waiting task was submitted, or
	// noWaiter.
	oldest(g *Group[T]) int64
	// heads calls f with the waiters a task of g may displace in this
	// queue for their slot (bit). These are the first of each priority
	// that holds one. Under fair share they are each of g's.
	heads(g *Group[T], holds func(w *Permits[T]) bool, f func(w *Permits[T]))
	// ahead counts the waiters served before w, which waits here (see
	// where.go).
	ahead(w *Permits[T]) int
}

const noWaiter = math.MaxInt64

// fifo is the queue of one group's layer, and of a queue's blocked
// callers. Waiters stand by priority, then in the order they joined. There
// is one list per priority. So joining touches only its own priority's
// last waiter, and serving only the first.
type fifo[T any] struct {
	full uint8 // bit p: lists[p] has a waiter
	// costly is set, for good, once a task of cost above one has waited in
	// the line. Permits are then handed over by count, not one for one. It
	// is the line's, whatever its queue, and sits here in padding.
	costly bool
	lists  [NumPriorities]list[T]
}

func (q *fifo[T]) empty() bool { return q.full == 0 }

func (q *fifo[T]) push(w *Permits[T]) { q.into(w).pushTail(w) }

func (q *fifo[T]) pushFront(w *Permits[T]) { q.into(w).placeFromHead(w, byLine, servedBefore[T]) }

// into returns the list of w's priority, counted not empty, since w is
// about to join it.
func (q *fifo[T]) into(w *Permits[T]) *list[T] {
	q.full |= 1 << w.prio
	return &q.lists[w.prio]
}

func (q *fifo[T]) pop() *Permits[T] {
	p := bits.TrailingZeros8(q.full)
	l := &q.lists[p]
	w := l.popHead()
	if l.head == nil {
		q.full &^= 1 << p
	}
	return w
}

func (q *fifo[T]) peek() *Permits[T] { return q.lists[bits.TrailingZeros8(q.full)].head }

func (q *fifo[T]) chooses() bool { return false }

func (q *fifo[T]) remove(w *Permits[T]) {
	l := &q.lists[w.prio]
	l.unlink(w, byLine)
	if l.head == nil {
		q.full &^= 1 << w.prio
	}
}

func (q *fifo[T]) gave(*Permits[T]) {}

// each calls f with every waiter, in the order they are served. The queue
// is one group's, or one queue's.
func (q *fifo[T]) each(_ *Group[T], f func(w *Permits[T])) {
	for p := range q.lists {
		q.lists[p].each(byLine, f)
	}
}

// heads calls f with the oldest waiter of each priority that holds a slot
// of g's queue (holds), highest priority first. g's own tasks reach a
// line in the order they were submitted, so that is the first of them.
// With children, g's subtree's tasks stand in the order they reached the
// line, which a child's own limits may have held back. Then every waiter
// is looked at, so a displacement costs the line's length.
func (q *fifo[T]) heads(g *Group[T], holds func(w *Permits[T]) bool, f func(w *Permits[T])) {
	q.oldestHolders(g.hasKids(), holds, f)
}

// oldestHolders is heads. With all set it looks at every waiter, else it
// takes the first that holds a slot. A lowered limit puts tasks that hold
// no slot at the head of a list, so it looks past them.
func (q *fifo[T]) oldestHolders(all bool, holds func(w *Permits[T]) bool, f func(w *Permits[T])) {
	for p := range q.lists {
		var best *Permits[T]
		for w := q.lists[p].head; w != nil; w = w.links.next {
			if holds(w) && (best == nil || compareAge(w, best) < 0) {
				if best = w; !all {
					break
				}
			}
		}
		if best != nil {
			f(best)
		}
	}
}

// firstSeq returns the seq of the first to join of its lists' heads. The
// queue is not empty. Only a kidQueue's buckets number their waiters.
func (q *fifo[T]) firstSeq() uint32 {
	var first *Permits[T]
	for p := range q.lists {
		if h := q.lists[p].head; h != nil && (first == nil || joinedBefore(h.seq, first.seq)) {
			first = h
		}
	}
	return first.seq
}

func (q *fifo[T]) oldest(*Group[T]) int64 {
	first := int64(noWaiter)
	for p := range q.lists {
		if h := q.lists[p].head; h != nil {
			first = min(first, h.submitted)
		}
	}
	return first
}

// globalFIFO is the global line's queue under IsolationOff. It is a fifo of
// every group's tasks. Each group's tasks are also chained, oldest first,
// from Group.chain, so that a group's oldest is found without a walk.
type globalFIFO[T any] struct{ fifo[T] }

func (q *globalFIFO[T]) push(w *Permits[T]) {
	q.fifo.push(w)
	w.group.chain.put(w, false)
}

// heads is fifo's for a line that tasks reach first, under IsolationOff,
// so in the order they were submitted. A paused group's tasks reach it
// once the group is resumed. Looking through the global line on every
// displacement would cost its length, so they are not looked for there.
func (q *globalFIFO[T]) heads(_ *Group[T], holds func(w *Permits[T]) bool, f func(w *Permits[T])) {
	q.oldestHolders(false, holds, f)
}

func (q *globalFIFO[T]) pushFront(w *Permits[T]) {
	q.fifo.pushFront(w)
	w.group.chain.put(w, true)
}

func (q *globalFIFO[T]) pop() *Permits[T] {
	w := q.fifo.pop()
	w.group.chain.unlink(w, byGroup)
	return w
}

func (q *globalFIFO[T]) remove(w *Permits[T]) {
	q.fifo.remove(w)
	w.group.chain.unlink(w, byGroup)
}

func (q *globalFIFO[T]) each(g *Group[T], f func(w *Permits[T])) {
	if g == nil {
		q.fifo.each(nil, f)
		return
	}
	g.chain.each(byGroup, f)
}

func (q *globalFIFO[T]) oldest(g *Group[T]) int64 { return g.oldestChained() }

// pauseQueue is a pause line's queue: a fifo whose tasks stand in the
// order they were submitted, whatever order they join in. A task of a
// child can reach the child's pause line after later ones. That happens
// when it waited in a paused parent's line, the child was paused
// meanwhile, and the parent resumed first. A new task joins last, after
// one comparison.
type pauseQueue[T any] struct{ fifo[T] }

func (q *pauseQueue[T]) push(w *Permits[T]) { q.pushAged(w) }

// pushAged puts w behind the tasks of its priority submitted before it,
// looking from the last.
func (q *fifo[T]) pushAged(w *Permits[T]) {
	l := q.into(w)
	at := l.tail
	for at != nil && compareAge(at, w) > 0 {
		at = at.links.prev
	}
	l.linkAfter(w, at, byLine)
}

// pushFront is push: no task goes ahead of one submitted before it.
func (q *pauseQueue[T]) pushFront(w *Permits[T]) { q.push(w) }

// pushResumed puts w, which a resume took out of a pause line, in a
// group's first come, first served line at its place by age. So a child's
// task keeps its place in a parent's line, ahead of the tasks that came
// meanwhile. In its own group's lines none came (see pause.go). Under fair
// share the choice decides, and it joins as any task. So it does in the
// global line, which a paused group's tasks reach only once resumed
// (globalFIFO).
func pushResumed[T any](q queue[T], w *Permits[T]) {
	if f, ok := q.(*fifo[T]); ok {
		f.pushAged(w)
		return
	}
	q.push(w)
}
