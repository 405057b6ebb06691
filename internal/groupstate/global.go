package groupstate

import "sync/atomic"

// Global is the executor-wide layer: the global in-flight permits, in a
// FIFO line (IsolationOff, taken first) or a fair line (fair share, taken
// last), the queue threshold bounding its waiters, and the executor-wide
// counts. It is safe for concurrent use.
type Global[T any] struct {
	line      *line[T]     // under IsolationOff
	fair      *fairLine[T] // under fair share
	queue     *slots[T]
	wake      func(*T)       // see SetHooks
	displaced func(by, v *T) // see SetHooks

	blocked atomic.Int64 // callers waiting for a queue slot, all groups

	// Counts across all groups, so that Stats reads them without visiting
	// any group. Each is the difference of two sums that only grow, each
	// sum on a cache line of its own: a task that waits is counted in as
	// waiting on the goroutine that submits it, and counted running, out
	// of waiting and out of running on the one that runs it.
	_   [64]byte
	in  globalCounts
	out globalCounts
}

type globalCounts struct {
	running atomic.Int64 // tasks holding every permit, all groups
	_       [56]byte
	waiting atomic.Int64 // tasks that joined a line and do not hold every permit yet
	_       [56]byte
}

// NewGlobal returns the global layer with the given limit and queue
// threshold; fair chooses fair share.
func NewGlobal[T any](limit, queueThreshold int, fair bool) *Global[T] {
	gl := &Global[T]{queue: newWideSlots[T](queueThreshold)}
	if fair {
		gl.fair = newFairLine[T](limit)
	} else {
		gl.line = newLine[T](limit)
		gl.line.chained = true
	}
	return gl
}

// Counts reports, across all groups (evicted ones too), the tasks running,
// waiting, and holding a global permit.
func (gl *Global[T]) Counts() (running, waiting, inFlight int) {
	return count(&gl.in.running, &gl.out.running), count(&gl.in.waiting, &gl.out.waiting), int(max(gl.heldCount().load(), 0))
}

// Held reports the global permits held and the global queue slots taken.
func (gl *Global[T]) Held() (inFlight, slots int) {
	return int(gl.heldCount().load()), int(gl.queue.load())
}

// waits returns the line of tasks waiting for a global permit: the FIFO
// line, or the fair line's own. Its limit and held permits are the layer's.
func (gl *Global[T]) waits() *line[T] {
	if gl.fair != nil {
		return &gl.fair.lock
	}
	return gl.line
}

func (gl *Global[T]) heldCount() *permits { return &gl.waits().held }

// setLimits makes limit and queueThreshold the global limits from now on;
// see Registry.Update.
func (gl *Global[T]) setLimits(limit, queueThreshold int) {
	gl.handSlots(gl.queue.setLimit(queueThreshold), heldGlobalSlot)
	gl.waits().setLimit(limit)
}

// grant hands the global permits a raised limit frees to waiting tasks.
func (gl *Global[T]) grant(c *Changes[T]) {
	if gl.fair != nil {
		c.handed(gl.fair.grant())
	} else {
		c.handed(gl.line.grant())
	}
}

func (gl *Global[T]) sweep(match func(p *Permits[T]) bool, out []*T) []*T {
	return gl.waits().sweep(match, out)
}

// count returns the count kept as the sums in and out. It reads in first:
// then the result is at most the count as out was read, and it is exact
// once tasks are still. A difference made negative by a task that came and
// went between the two reads reads as 0.
func count(in, out *atomic.Int64) int {
	n := in.Load()
	n -= out.Load()
	return int(max(n, 0))
}
