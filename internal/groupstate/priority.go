package groupstate

import "unsafe"

// Priorities order the waiters of a line. A waiter never stands behind one
// of a lower priority. Waiters of one priority stand in the order they
// joined. 0 is the highest. PriorityDefault is what every task has unless
// its submitter says otherwise.
const (
	NumPriorities   = 5
	PriorityDefault = 2
)

// warm asks the processor to fetch w's task, which a fifo serves soon,
// ahead of its turn. While several priorities wait, a fifo serves tasks far
// from the order they were allocated in. There the processor does not
// fetch ahead as it does down one list. BenchmarkW3HotGroupPriorities
// (benchmarks module) runs five priorities in turn against one. Its extra
// cost shrinks when the next two are fetched at each pop (-cpu 1, see
// benchmarks/RESULTS.md). Plain loads in place of the hint helped less. A
// load that misses holds the processor up, and a prefetch does not. At one
// priority warm is not asked for, because the processor fetches ahead
// itself.
func (w *Permits[T]) warm() { prefetch(unsafe.Pointer(w), unsafe.Sizeof(*w.task())) }
