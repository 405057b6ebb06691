package groupstate

import "sync/atomic"

// tally is a number of permits (or queue slots) held, checked against a
// limit as it is taken. It is one word (narrow) or two sums (wide, see
// permits), chosen before the count is shared. The executor-wide counts,
// which every task of every group writes, are wide, so that an Unlimited
// global layer only adds (BenchmarkTally, at -cpu 2). A group's counts are narrow, which keeps a group
// small (BenchmarkGroupFootprint). A hot group's counts once widened when
// its tasks began to wait. W3HotGroup of the benchmarks module, at -cpu 2,
// measured that no different from one word (benchmarks/RESULTS.md), so
// they no longer do.
type tally struct {
	n    atomic.Int64 // the permits held while narrow
	wide *permits     // set by widen before the count is shared, then never changed
}

// widen makes the count wide. Call it before the count is shared, while it
// holds no permit.
func (c *tally) widen() { c.wide = new(permits) }

// load returns the permits held.
func (c *tally) load() int64 {
	if c.wide != nil {
		return c.wide.load()
	}
	return c.n.Load()
}

// take takes a permit if fewer than limit are held.
func (c *tally) take(limit int64) bool {
	if c.wide != nil {
		return c.wide.take(limit, 1)
	}
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

// takeN takes n permits if they fit under limit. n is at most limit (see
// Permits.need), so a task alone at a layer always fits.
func (c *tally) takeN(n, limit int64) bool {
	if n == 1 {
		return c.take(limit)
	}
	if c.wide != nil {
		return c.wide.take(limit, n)
	}
	for {
		h := c.n.Load()
		if h+n > limit {
			return false
		}
		if c.n.CompareAndSwap(h, h+n) {
			return true
		}
	}
}

// give gives one permit back.
func (c *tally) give() { c.giveN(1) }

// giveN gives n permits back.
func (c *tally) giveN(n int64) {
	if c.wide != nil {
		c.wide.given.Add(n)
		return
	}
	c.n.Add(-n)
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

// take takes n permits if they fit under limit. given only grows, so the
// count checked is at least the count when the CAS succeeds.
func (c *permits) take(limit, n int64) bool {
	if limit == Unlimited {
		c.taken.Add(n)
		return true
	}
	for {
		t := c.taken.Load()
		if t-c.given.Load()+n > limit {
			return false
		}
		if c.taken.CompareAndSwap(t, t+n) {
			return true
		}
	}
}
