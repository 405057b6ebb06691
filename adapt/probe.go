package adapt

import (
	"math"
)

// probe is what measuring the baseline has seen so far.
type probe struct {
	done  bool
	last  float64 // the previous window's percentile run time, 0 before one
	lastN float64 // the previous window's mean running count, if it did not fill
	prev  int     // the limit before it was last halved
	// best is the greatest mean running count per unit of run time of a
	// window. Times the baseline, it is the concurrency the backend
	// served at once.
	best float64
	// least is the least run time of the light windows since the last
	// full one. The first of them found the shortest line.
	least float64
}

// bound is how full a limit must run for it to bind.
const bound = 0.9

// overShare is the inverse of the share of Overload samples past which a
// window is overloaded. It is one in ten.
const overShare = 10

// noiseLocked returns how far the window's percentile r may be off by
// chance, as a fraction of r. It is twice r's standard error, from the
// spread of the window's run times. A window of few samples, or of run
// times far apart, must run that much slower to count as slow.
func (g *Gradient) noiseLocked(r float64) float64 {
	a := &g.w.all
	q1, q3 := float64(a.percentile(0.25)), float64(a.percentile(0.75))
	// The interquartile range is 1.35 standard deviations of a normal
	// distribution. A quantile's standard error is about 1.25 standard
	// deviations over the root of the count.
	return 2 * 1.25 * (q3 - q1) / 1.35 / r / math.Sqrt(float64(a.seen))
}

// probeLocked measures the baseline. It returns the limit after the
// window that just closed, whose mean running count is n, while the
// baseline is unknown.
//
// It judges only the tasks that started at a full limit. A task that
// started while the limit was still filling found a shorter line in the
// backend than the limit lets build up. Its run time lags the limit.
// Deadlines that passed count only if shared says the overload was.
func (g *Gradient) probeLocked(limit int, n float64, shared bool) int {
	p := &g.probe
	tol := g.c.Tolerance
	full := g.w.full.seen*2 >= g.w.all.seen && len(g.w.full.d) > 0
	over := g.w.over*overShare > g.w.all.seen && shared // one group's is its own
	if !full && !over {
		// Light load, or a limit still filling. The run time is the
		// baseline once the running count no longer climbs.
		r := float64(g.w.all.percentile(g.c.Percentile))
		if p.least == 0 || r < p.least {
			p.least = r
		}
		climbing := p.lastN == 0 || n > p.lastN*(1+tol)+1
		p.lastN = n
		if climbing {
			return limit
		}
		p.done = true
		// Settled, as a cold start's: a level the load moves to next does
		// not take over as the baseline by being seen as often. The load
		// may be just over the capacity. Then a queue builds slowly in
		// the backend, and the run times climb with the running count. The
		// least of them is the one without queueing.
		g.levels.seed(int(math.Round(n)), p.least)
		return limit
	}
	p.lastN, p.least = 0, 0
	var r float64
	if full {
		r = float64(g.w.full.percentile(g.c.Percentile))
	} else {
		r = float64(g.w.all.percentile(g.c.Percentile))
	}
	p.best = math.Max(p.best, n/r)
	if limit > g.min && (p.last == 0 || r < p.last*(1-tol) || over) {
		// Run times still fall with the limit. There was queueing.
		p.last, p.prev = r, limit
		return max(int(float64(limit)*(1-g.c.MaxDecrease)), g.min)
	}
	// The minimum, or run times that no longer fall. Then r is the run
	// time of a task that does not queue, and so was the last window's.
	// Their mean is less subject to chance than either.
	p.done = true
	if p.last > 0 {
		r = (r + p.last) / 2
	}
	g.levels.seed(int(math.Round(n)), r)
	return min(max(int(p.best*r*(1+tol/2)), p.prev, g.min), g.max)
}
