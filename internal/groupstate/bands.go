package groupstate

import "unsafe"

// Priorities order the waiters of a line: a waiter never stands behind one
// of a lower priority, and waiters of one priority stand in the order they
// joined. 0 is the highest; PriorityDefault is what every task has unless
// its submitter says otherwise.
const (
	NumPriorities   = 5
	PriorityDefault = 2
)

// bands are a fifo's waiters once more than the default priority has
// joined: a list per priority, and which are not empty.
type bands[T any] struct {
	lists [NumPriorities]list[T]
	full  uint8 // bit p: lists[p] has a waiter
}

// band returns the list of w's priority, making the bands on first use
// (the waiters so far, all of the default priority, become its list), and
// counts it not empty: w is about to join it.
func (q *fifo[T]) band(w *Permits[T]) *list[T] {
	b := q.bands
	if b == nil {
		b = new(bands[T])
		b.lists[PriorityDefault] = q.list
		if q.head != nil {
			b.full = 1 << PriorityDefault
		}
		q.list = list[T]{}
		q.bands = b
	}
	b.full |= 1 << w.prio
	return &b.lists[w.prio]
}

// warm asks the processor to fetch w's task, which the bands serve soon,
// ahead of its turn. Bands serve tasks far from the order they were
// allocated in, where the processor does not fetch ahead as it does down
// one list: BenchmarkW3HotGroupPriorities (benchmarks module), five
// priorities in turn against one, costs 1.12x without warm and 1.03x with
// the next two fetched at each pop (-cpu 1, 10 interleaved rounds; see
// benchmarks/RESULTS.md). Plain loads in place of the hint got 1.07x: a
// load that misses holds the processor up, a prefetch does not.
func (w *Permits[T]) warm() { prefetch(unsafe.Pointer(w), unsafe.Sizeof(*w.task())) }
