package groupstate

// Lists of waiting tasks. A task is linked into its line's queue. It is
// linked into its group's chain while it waits in the global line. Once
// handed a permit, it is linked into its releaser's chain of handed tasks.

// chain links waiters taken out of a line, in order, by next.
type chain[T any] struct{ head, tail *Permits[T] }

func (c *chain[T]) add(w *Permits[T]) {
	if w == nil { // it waits for its turn (see turn.go)
		return
	}
	if c.tail == nil {
		c.head = w
	} else {
		c.tail.next = w
	}
	c.tail = w
}

// links are a task's place in a list.
type links[T any] struct{ prev, next *Permits[T] }

// Which links of a task a list goes through.
const (
	byLine  = iota // its line's queue
	byGroup        // its group's chain in the global line
)

func (w *Permits[T]) by(k int) *links[T] {
	if k == byGroup {
		return &w.chained
	}
	return &w.links
}

// list is a doubly linked list of waiters, through their links k.
type list[T any] struct{ head, tail *Permits[T] }

// linkAfter links w in after at (at the head for nil).
func (q *list[T]) linkAfter(w, at *Permits[T], k int) {
	wl := w.by(k)
	wl.prev = at
	if at == nil {
		wl.next = q.head
		q.head = w
	} else {
		wl.next = at.by(k).next
		at.by(k).next = w
	}
	if wl.next == nil {
		q.tail = w
	} else {
		wl.next.by(k).prev = w
	}
}

// placeFromHead links w in, through its links k, behind the waiters at
// the head that go first (first(n, w)). Tasks put back at the head one at
// a time so keep their order.
func (q *list[T]) placeFromHead(w *Permits[T], k int, first func(a, b *Permits[T]) bool) {
	var at *Permits[T]
	for n := q.head; n != nil && first(n, w); n = n.by(k).next {
		at = n
	}
	q.linkAfter(w, at, k)
}

// unlink takes w out.
func (q *list[T]) unlink(w *Permits[T], k int) {
	wl := w.by(k)
	if wl.prev == nil {
		q.head = wl.next
	} else {
		wl.prev.by(k).next = wl.next
	}
	if wl.next == nil {
		q.tail = wl.prev
	} else {
		wl.next.by(k).prev = wl.prev
	}
	wl.prev, wl.next = nil, nil
}

// each calls f with every waiter, in order. f may unlink the one it is
// given.
func (q *list[T]) each(k int, f func(w *Permits[T])) {
	for w := q.head; w != nil; {
		next := w.by(k).next
		f(w)
		w = next
	}
}

// pushTail links w in last, through its line links.
func (q *list[T]) pushTail(w *Permits[T]) {
	w.prev, w.next = q.tail, nil
	if q.tail == nil {
		q.head = w
	} else {
		q.tail.next = w
	}
	q.tail = w
}

// popHead takes out the first, through the line links. Every line pops a
// waiter per permit handed on, so it does not go through unlink.
func (q *list[T]) popHead() *Permits[T] {
	w := q.head
	q.head, w.next = w.next, nil
	if q.head == nil {
		q.tail = nil
	} else {
		q.head.prev = nil
	}
	return w
}
