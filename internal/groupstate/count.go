package groupstate

import "sync/atomic"

// tally is a number of permits (or queue slots) held, checked against a
// limit as it is taken. It is one word, or, for the executor-wide counts
// every task of every group writes (the global layer and the global
// queue), wide: see permits. A group's counts are one word each: a group
// has three, and keeping them apart cost W1 and W3 hot nothing measurable
// once what tasks read of a group sits on a cache line of its own
// (TestGroupLayout; benchmarks/MEMORY.md).
type tally struct {
	n    atomic.Int64 // the permits held, unless wide
	wide *permits
}

// widen makes a new tally wide if wide.
func (c *tally) widen(wide bool) {
	if wide {
		c.wide = new(permits)
	}
}

// load returns the permits held.
func (c *tally) load() int64 {
	if c.wide != nil {
		return c.wide.load()
	}
	return c.n.Load()
}

// take takes a permit if fewer than limit are held. Kept small enough to
// inline, as the wide count's take is: every task takes a permit of each
// layer.
func (c *tally) take(limit int64) bool {
	if c.wide == nil {
		return c.takeOne(limit)
	}
	return c.wide.take(limit)
}

func (c *tally) takeOne(limit int64) bool {
	for {
		n := c.n.Load()
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
	if c.wide != nil {
		c.wide.given.Add(1)
		return
	}
	c.n.Add(-1)
}

// permits counts permits held as two sums that only grow, taken and given
// back, on cache lines of their own: a task usually takes its permits on
// the goroutine that submits it and gives them back on the one that runs
// it, so the two sides do not write to one line
// (BenchmarkW1Unlimited/peer=groupconc). An Unlimited layer only adds.
type permits struct {
	_     [64]byte // off the line of the fields both sides read
	taken atomic.Int64
	_     [56]byte
	given atomic.Int64
	_     [56]byte
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
