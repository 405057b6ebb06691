package groupstate

// Priorities order the waiters of a line: a waiter never stands behind one
// of a lower priority, and waiters of one priority stand in the order they
// joined. 0 is the highest; PriorityDefault is what every task has unless
// its submitter says otherwise.
const (
	NumPriorities   = 5
	PriorityDefault = 2
)

// bands are the last waiter of each priority in a line. A line makes them
// when a waiter of another priority than the default first joins it;
// until then every waiter has the default priority, and joining is
// appending at the tail, as in a line without priorities.
type bands[T any] [NumPriorities]*waiter[T]

// insertLocked puts w, of any priority, behind every waiter of its
// priority or a higher one.
func (l *line[T]) insertLocked(w *waiter[T]) {
	b := l.bandsLocked()
	var after *waiter[T]
	for q := int(w.prio); q >= 0 && after == nil; q-- {
		after = b[q]
	}
	l.linkAfterLocked(w, after)
	b[w.prio] = w
}

// frontLocked puts w ahead of every waiter of its priority (a task sent
// back by a lowered limit goes back to the head of its line), behind those
// of a higher one.
func (l *line[T]) frontLocked(w *waiter[T]) {
	if l.bands == nil && w.prio == PriorityDefault {
		l.linkAfterLocked(w, nil)
		return
	}
	b := l.bandsLocked()
	var after *waiter[T]
	for q := int(w.prio) - 1; q >= 0 && after == nil; q-- {
		after = b[q]
	}
	l.linkAfterLocked(w, after)
	if b[w.prio] == nil {
		b[w.prio] = w
	}
}

// bandsLocked returns l's bands, making them on first use.
func (l *line[T]) bandsLocked() *bands[T] {
	if l.bands == nil {
		l.bands = new(bands[T])
		l.bands[PriorityDefault] = l.tail // every waiter so far has the default priority
	}
	return l.bands
}

// linkAfterLocked links w into the line after at (at the head for nil).
func (l *line[T]) linkAfterLocked(w, at *waiter[T]) {
	w.prev = at
	if at == nil {
		w.next = l.head
		l.head = w
	} else {
		w.next = at.next
		at.next = w
	}
	if w.next == nil {
		l.tail = w
	} else {
		w.next.prev = w
	}
}

// unbandLocked keeps the bands right as w leaves the line.
func (l *line[T]) unbandLocked(w *waiter[T]) {
	if b := l.bands; b != nil && b[w.prio] == w {
		if p := w.prev; p != nil && p.prio == w.prio {
			b[w.prio] = p
		} else {
			b[w.prio] = nil
		}
	}
}

// bandHeadsLocked calls f with the first waiter of each priority present,
// highest priority first: the oldest of each, since a priority's waiters
// stand in the order they joined.
func (l *line[T]) bandHeadsLocked(f func(w *waiter[T])) {
	b := l.bands
	if b == nil {
		if l.head != nil {
			f(l.head)
		}
		return
	}
	at := l.head
	for q := range b {
		if b[q] != nil {
			f(at)
			at = b[q].next
		}
	}
}
