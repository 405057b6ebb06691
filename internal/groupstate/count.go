package groupstate

import (
	"math"
	"sync/atomic"
)

// tally is a number of permits (or queue slots) held, checked against a
// limit as it is taken. It is one word. Under an Unlimited limit a take
// only adds, so that no cost held there makes a task wait. Two sums, taken
// and given back, each written by its own side, once counted the
// executor-wide layers. They measured no faster than one word in
// BenchmarkTally and in W1–W3 at -cpu 1 and 2 (benchmarks/RESULTS.md), so
// they are gone.
type tally struct {
	n atomic.Int64
}

// load returns the permits held.
func (c *tally) load() int64 { return c.n.Load() }

// take takes a permit if fewer than limit are held.
func (c *tally) take(limit int64) bool { return c.takeN(1, limit) }

// takeN takes n permits if they fit under limit. n is at most limit (see
// Permits.need), so a task alone at a layer always fits, and limit-n does
// not overflow where h+n might.
func (c *tally) takeN(n, limit int64) bool {
	if limit == Unlimited {
		c.n.Add(n)
		return true
	}
	for {
		h := c.n.Load()
		if h > limit-n {
			return false
		}
		if c.n.CompareAndSwap(h, h+n) {
			return true
		}
	}
}

// maxHeld is where addUpTo stops a count. Past it, room is left for 2^32
// tasks of cost one, which always take their permit, before the count
// could wrap.
const maxHeld = math.MaxInt64 - 1<<32

// addUpTo takes n permits under a limit of Unlimited, or as many as keep
// the count within maxHeld, at least one. It returns how many it took. So
// a task holds its whole cost there, as under a limit, and a limit set
// later counts it.
func (c *tally) addUpTo(n int64) int64 {
	for {
		h := c.n.Load()
		m := min(n, max(maxHeld-h, 1))
		if c.n.CompareAndSwap(h, h+m) {
			return m
		}
	}
}

// add takes a permit whatever the limit. The count may pass it then, as
// it does when a limit is lowered.
func (c *tally) add() { c.n.Add(1) }

// give gives one permit back.
func (c *tally) give() { c.giveN(1) }

// giveN gives n permits back.
func (c *tally) giveN(n int64) { c.n.Add(-n) }
