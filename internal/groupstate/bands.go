package groupstate

// Priorities order the waiters of a line: a waiter never stands behind one
// of a lower priority, and waiters of one priority stand in the order they
// joined. 0 is the highest; PriorityDefault is what every task has unless
// its submitter says otherwise.
const (
	NumPriorities   = 5
	PriorityDefault = 2
)

// bands are the last waiter of each priority in a fifo. A fifo makes them
// when a waiter of another priority than the default first joins it;
// until then every waiter has the default priority, and joining is
// appending at the tail, as in a line without priorities.
type bands[T any] [NumPriorities]*Permits[T]

// insert puts w, of any priority, behind every waiter of its priority or
// a higher one.
func (q *fifo[T]) insert(w *Permits[T]) {
	b := q.bandsMade()
	var after *Permits[T]
	for p := int(w.prio); p >= 0 && after == nil; p-- {
		after = b[p]
	}
	q.linkAfter(w, after, byLine)
	b[w.prio] = w
}

// pushFront puts w ahead of every waiter of its priority, behind those of
// a higher one.
func (q *fifo[T]) pushFront(w *Permits[T]) {
	if q.bands == nil && w.prio == PriorityDefault {
		q.linkAfter(w, nil, byLine)
		return
	}
	b := q.bandsMade()
	var after *Permits[T]
	for p := int(w.prio) - 1; p >= 0 && after == nil; p-- {
		after = b[p]
	}
	q.linkAfter(w, after, byLine)
	if b[w.prio] == nil {
		b[w.prio] = w
	}
}

// bandsMade returns q's bands, making them on first use.
func (q *fifo[T]) bandsMade() *bands[T] {
	if q.bands == nil {
		q.bands = new(bands[T])
		q.bands[PriorityDefault] = q.tail // every waiter so far has the default priority
	}
	return q.bands
}

// unband keeps the bands right as w leaves.
func (q *fifo[T]) unband(w *Permits[T]) {
	if b := q.bands; b != nil && b[w.prio] == w {
		if p := w.prev; p != nil && p.prio == w.prio {
			b[w.prio] = p
		} else {
			b[w.prio] = nil
		}
	}
}

// heads calls f with the first waiter of each priority present, highest
// priority first: the oldest of each, since a priority's waiters stand in
// the order they joined.
func (q *fifo[T]) heads(_ *Group[T], f func(w *Permits[T])) {
	b := q.bands
	if b == nil {
		if q.head != nil {
			f(q.head)
		}
		return
	}
	at := q.head
	for p := range b {
		if b[p] != nil {
			f(at)
			at = b[p].next
		}
	}
}
