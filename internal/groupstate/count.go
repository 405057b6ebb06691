package groupstate

import (
	"runtime"
	"sync/atomic"
)

// tally is a number of permits (or queue slots) held, checked against a
// limit as it is taken. It is one word (narrow) or, once wide, two sums
// (see permits). The executor-wide counts, which every task of every group
// writes, are wide from the start, so that an Unlimited global layer only
// adds. A group's counts stay narrow, which keeps a group small
// (BenchmarkGroupFootprint). A hot group's counts once widened when its
// tasks began to wait. W3HotGroup of the benchmarks module, at -cpu 2,
// measured that no different from one word (benchmarks/RESULTS.md), so
// they no longer do.
type tally struct {
	n    atomic.Int64 // the permits held while narrow; once wide, moved + them
	wide atomic.Pointer[permits]
}

// moved is added to a narrow count as it widens. A count at or over
// moved/2 is wide, or about to be. Counts never come near it.
const moved = 1 << 40

// widen makes the count wide, moving the permits held into it. A count
// already wide, or widening on another goroutine, is left alone.
func (c *tally) widen() {
	for {
		n := c.n.Load()
		if n >= moved/2 {
			return
		}
		if c.n.CompareAndSwap(n, n+moved) { // no narrow change after this
			w := new(permits)
			w.taken.Store(n)
			c.wide.Store(w)
			return
		}
	}
}

// widened returns the wide count of a count that has moved. The goroutine
// moving it publishes it right after.
func (c *tally) widened() *permits {
	for {
		if w := c.wide.Load(); w != nil {
			return w
		}
		runtime.Gosched()
	}
}

// load returns the permits held.
func (c *tally) load() int64 {
	if w := c.wide.Load(); w != nil {
		return w.load()
	}
	if n := c.n.Load(); n < moved/2 {
		return n
	}
	return c.widened().load()
}

// take takes a permit if fewer than limit are held.
func (c *tally) take(limit int64) bool {
	if w := c.wide.Load(); w != nil {
		return w.take(limit)
	}
	return c.takeOne(limit)
}

func (c *tally) takeOne(limit int64) bool {
	for {
		n := c.n.Load()
		if n >= moved/2 {
			return c.widened().take(limit)
		}
		if n >= limit {
			return false
		}
		if c.n.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// give gives one permit back.
func (c *tally) give() {
	if w := c.wide.Load(); w != nil {
		w.given.Add(1)
		return
	}
	if c.n.Add(-1)+1 >= moved/2 { // moved: what it counts now is wide
		c.widened().given.Add(1)
	}
}

// permits counts permits held as two sums that only grow, taken and given
// back. A task usually takes its permits on the goroutine that submits it
// and gives them back on the one that runs it. So each side writes a word
// of its own, and giving back is an add, not a compare-and-swap. Padding
// the sums onto cache lines of their own measured no faster (W1 and
// W3HotGroup of the benchmarks module, benchmarks/RESULTS.md). An
// Unlimited layer only adds.
type permits struct {
	taken atomic.Int64
	given atomic.Int64
}

// load returns the permits held. It reads taken first, so it never counts
// more than were held at once.
func (c *permits) load() int64 {
	t := c.taken.Load()
	return t - c.given.Load()
}

// take takes a permit if fewer than limit are held. given only grows, so
// the count checked is at least the count when the CAS succeeds.
func (c *permits) take(limit int64) bool {
	if limit == Unlimited {
		c.taken.Add(1)
		return true
	}
	for {
		t := c.taken.Load()
		if t-c.given.Load() >= limit {
			return false
		}
		if c.taken.CompareAndSwap(t, t+1) {
			return true
		}
	}
}
