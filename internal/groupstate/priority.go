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

// warm asks the processor to fetch w's task, which a fifo serves soon,
// ahead of its turn. While several priorities wait, a fifo serves tasks far
// from the order they were allocated in, where the processor does not fetch
// ahead as it does down one list: BenchmarkW3HotGroupPriorities (benchmarks
// module), five priorities in turn against one, costs 1.12x without warm
// and 1.03x with the next two fetched at each pop (-cpu 1, 10 interleaved
// rounds; see benchmarks/RESULTS.md). Plain loads in place of the hint got
// 1.07x: a load that misses holds the processor up, a prefetch does not.
// At one priority it is not asked for: the processor fetches ahead itself.
func (w *Permits[T]) warm() { prefetch(unsafe.Pointer(w), unsafe.Sizeof(*w.task())) }
