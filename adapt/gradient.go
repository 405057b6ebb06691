package adapt

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kobe/groupconc"
)

// GradientConfig configures a Gradient. A field that is zero, or out of
// its range, takes its default.
type GradientConfig struct {
	// Window is the least time one window of samples spans; 0 means
	// 100ms. The limit moves at most once per window.
	Window time.Duration
	// MinSamples is the least samples a window holds: a window whose
	// time is up waits for them. 0 means 20.
	MinSamples int
	// Percentile is the quantile of a window's run times that is compared
	// with the baseline, in (0, 1); 0 means 0.5, the median, which a few
	// slow tasks do not move.
	Percentile float64
	// Tolerance is how much slower than the baseline a window may run
	// before it counts as queueing in the backend: above (1+Tolerance) ×
	// baseline the limit falls; below (1+Tolerance/2) × baseline it may
	// rise. 0 means 0.1.
	Tolerance float64
	// Utilisation is how busy the limit must be for it to rise: the mean
	// running count at the start of a window's tasks must be at least
	// Utilisation × the limit. A limit that something else holds back (a
	// global cap, fair share, light load) so does not grow. 0 means 0.75.
	Utilisation float64
	// MaxDecrease is the largest fraction of the limit one window may
	// take off; 0 means 0.5.
	MaxDecrease float64
	// Smoothing is the weight of a window in the moving average of the
	// run time at its concurrency, the least of which is the baseline; 0
	// means 0.25.
	Smoothing float64
	// BaselineAge is how many windows the run time seen at one
	// concurrency counts towards the baseline without being seen again; 0
	// means 100.
	BaselineAge int
	// Reprobe is how many windows the limit may sit at its minimum while
	// the run times stay above the baseline before it takes the run time
	// of the latest window as the baseline, and so may rise again: the
	// backend got slower, not busier. 0 means 5.
	Reprobe int
	// Patience is how many windows in a row must run slow before a
	// limit that does not bind falls; 0 means 3. One slow window may be
	// a burst. Slow windows in a row show a backend that queues.
	Patience int
	// HeldPatience is how many windows in a row must run slow before a
	// limit held back by other groups falls; 0 means 10. A group is held
	// back when most of its tasks started with tasks of it waiting while
	// it ran below its limit: the global cap, fair share or a parent held
	// them. The other groups may be what slows the backend, and the
	// global cap, if adaptive, acts on that first. Slowness that outlasts
	// it is the group's own.
	HeldPatience int
	// Resolution is the shortest run time told apart: shorter ones count
	// as it, so that scheduling noise in very short tasks does not move
	// the limit. 0 means 100µs.
	Resolution time.Duration
	// Classify says what a sample means; nil means DefaultClassify. The
	// run times of Overload samples count as lower bounds.
	Classify func(groupconc.LimitSample) Signal
}

func (c GradientConfig) withDefaults() GradientConfig {
	orDuration(&c.Window, 100*time.Millisecond)
	orCount(&c.MinSamples, 20)
	orFraction(&c.Percentile, 0.5, false)
	if !(c.Tolerance > 0) || math.IsInf(c.Tolerance, 0) {
		c.Tolerance = 0.1
	}
	orFraction(&c.Utilisation, 0.75, true)
	orFraction(&c.MaxDecrease, 0.5, true)
	orFraction(&c.Smoothing, 0.25, true)
	orCount(&c.BaselineAge, 100)
	orCount(&c.Reprobe, 5)
	orCount(&c.Patience, 3)
	orCount(&c.HeldPatience, 10)
	orDuration(&c.Resolution, 100*time.Microsecond)
	return c
}

// orDuration, orCount and orFraction set a field that is zero or out of
// range to its default: a fraction is in (0, 1), or (0, 1] if one is.
func orDuration(v *time.Duration, d time.Duration) {
	if *v <= 0 {
		*v = d
	}
}

func orCount(v *int, d int) {
	if *v <= 0 {
		*v = d
	}
}

func orFraction(v *float64, d float64, one bool) {
	if !(*v > 0 && (*v < 1 || one && *v == 1)) {
		*v = d
	}
}

// New returns a Gradient of c moving within [lo, hi]; it has the type of
// groupconc.AdaptiveConfig.New.
func (c GradientConfig) New(_ string, lo, hi int) groupconc.AdaptiveLimit {
	return NewGradient(lo, hi, c)
}

// Gradient is a limit that follows the run times of its tasks. It keeps a
// baseline, the run time of a task that does not queue in the backend, and
// compares the percentile of each window's run times with it. A window
// that ran slower than the baseline allows, at a limit its tasks filled,
// ran at a concurrency the backend could not serve at once: the limit falls
// to that concurrency scaled by the slowdown (under processor sharing, the
// backend's capacity). A window that ran close to the baseline, at a busy
// limit, raises it by Tolerance of itself (at least one).
//
// A Gradient starts at max, and measures its baseline first: if its first
// window is busy, it halves the limit each window until the run times stop
// falling, so that a start under overload finds the backend's capacity
// rather than taking the overloaded run time for the baseline. From then
// on the baseline is the least of the run times seen at the concurrencies
// the limit ran at lately, each averaged over its windows (see levels): it
// does not drift up with a long overload, and the limit's moves about the
// backend's capacity keep it measured.
//
// A Gradient is safe for concurrent use. Make one with NewGradient, or
// GradientConfig.New; its zero value is not usable.
type Gradient struct {
	c        GradientConfig
	min, max int
	limit    atomic.Int64

	mu     sync.Mutex
	w      window // guarded by mu
	levels levels // guarded by mu
	probe  probe  // guarded by mu, until the baseline is first measured
	atMin  int    // guarded by mu: windows at min, queueing
	slow   int    // guarded by mu: windows in a row slow at a limit that does not bind
	tally  tally  // guarded by mu
}

// probe is what measuring the baseline has seen so far.
type probe struct {
	done  bool
	last  float64 // the previous window's percentile run time; 0 before the first
	lastN float64 // the previous window's mean running count, if it did not fill
	prev  int     // the limit before it was last halved
	// The greatest mean running count per unit of run time of a window:
	// times the baseline, the concurrency the backend served at once.
	best float64
}

// NewGradient returns a Gradient of c that moves within [lo, hi] (lo at
// least 1) and starts at hi.
func NewGradient(lo, hi int, c GradientConfig) *Gradient {
	lo = max(lo, 1)
	g := &Gradient{c: c.withDefaults(), min: lo, max: max(lo, hi)}
	g.limit.Store(int64(g.max))
	return g
}

// Limit returns the limit g wants now.
func (g *Gradient) Limit() int { return int(g.limit.Load()) }

// Observe takes one sample and returns the limit g wants.
func (g *Gradient) Observe(s groupconc.LimitSample) int {
	var sig Signal
	if g.c.Classify == nil {
		sig = classify(&s)
	} else {
		sig = g.c.Classify(s)
	}
	if sig == Ignore || s.Limit > int(g.limit.Load()) {
		// A task that started before the limit last fell shows what was
		// acted on already.
		return g.Limit()
	}
	return g.record(&s, sig)
}

// record adds a sample to the window, once the window it closes (if due)
// has been decided on, and returns the limit. Observe's caller runs on a
// small stack (see groupconc's sample). So the frames on this path stay
// small, and the window's decision, once per window, is a call away.
func (g *Gradient) record(s *groupconc.LimitSample, sig Signal) int {
	end, run := s.End.UnixNano(), max(s.RunTime, g.c.Resolution)
	g.mu.Lock()
	if g.w.all.seen > 0 && g.w.due(end, g.c.Window, g.c.MinSamples) {
		g.closeLocked()
	}
	g.w.add(end, run, s.Running, s.Limit, sig, s.Waiting > 0 && s.Running < s.Limit)
	g.tally.add(s.GroupKey, run, sig)
	limit := int(g.limit.Load())
	g.mu.Unlock()
	return limit
}

// closeLocked decides on the window that just closed and starts the next.
//
//go:noinline
func (g *Gradient) closeLocked() {
	g.limit.Store(int64(g.decideLocked(int(g.limit.Load()))))
	g.w.reset()
}

// decideLocked returns the limit after the window that just closed.
func (g *Gradient) decideLocked(limit int) int {
	n := g.w.meanRunning()
	tol := g.c.Tolerance
	shared := g.tally.close(2 * tol)
	if !g.probe.done {
		return g.probeLocked(limit, n)
	}
	r := float64(g.w.all.percentile(g.c.Percentile))
	g.levels.add(int(math.Round(n)), r, g.c.Smoothing)
	ratio := r / g.levels.baseline(g.c.BaselineAge)
	margin := tol + g.noiseLocked(r)
	// A deadline passed: that is overload, whatever the running count.
	// The caller gave up, but the backend may still work on the call.
	over := g.w.over*overShare > g.w.all.seen && shared
	slow := ratio > 1+margin && shared
	if over || slow {
		g.slow++
	} else {
		g.slow = 0
	}
	switch {
	case g.w.held*2 > g.w.all.seen:
		// Held back by other groups, which may be what slows the
		// backend: the global cap, if adaptive, acts first.
		slow = g.slow >= g.c.HeldPatience
	case over:
	case slow && n < bound*float64(limit):
		// The limit does not bind. A burst may have slowed this window,
		// so the limit falls only once the run times stay slow.
		slow = g.slow >= g.c.Patience
	case slow:
		// One window slower than its noise allows may still be chance.
		// Two in a row, or one far slower, are not.
		slow = g.slow >= 2 || ratio > 1+2*margin
	}
	switch {
	case over && g.w.held*2 <= g.w.all.seen || slow:
		if limit == g.min && !over {
			if g.atMin++; g.atMin >= g.c.Reprobe {
				// The backend got slower, not busier.
				g.levels.reset()
				g.levels.add(int(math.Round(n)), r, 1)
				g.atMin = 0
			}
			return limit
		}
		g.atMin = 0
		// A limit that does not bind falls too: the run times show
		// that the backend queues at the concurrency it now serves.
		base := min(n, float64(limit))
		target := int(math.Round(base * (1 + tol/2) / max(ratio, 1+margin)))
		floor := int(math.Ceil(base * (1 - g.c.MaxDecrease)))
		return max(min(max(target, floor), limit-1), g.min)
	case ratio < 1+tol/2 && n >= g.c.Utilisation*float64(limit) && g.w.over == 0:
		g.atMin = 0
		return min(limit+max(1, int(math.Round(float64(limit)*tol))), g.max)
	}
	g.atMin = 0
	return limit
}

// noiseLocked returns how far the window's percentile r may be off by
// chance, as a fraction of it: twice its standard error, from the spread
// of the window's run times. A window of few samples, or of run times far
// apart, must run that much slower before it counts as slow.
func (g *Gradient) noiseLocked(r float64) float64 {
	a := &g.w.all
	q1, q3 := float64(a.percentile(0.25)), float64(a.percentile(0.75))
	// The interquartile range is 1.35 standard deviations of a normal
	// distribution. A quantile's standard error is about 1.25 standard
	// deviations over the root of the count.
	return 2 * 1.25 * (q3 - q1) / 1.35 / r / math.Sqrt(float64(a.seen))
}

// bound is how full a limit must run for it to bind.
const bound = 0.9

// overShare is the inverse of the share of Overload samples past which a
// window is overloaded: one in 10.
const overShare = 10

// probeLocked measures the baseline. It returns the limit after the
// window that just closed, whose mean running count is n, while the
// baseline is unknown.
//
// Only the tasks that started at a full limit are judged. A task that
// started while the limit was still filling found a shorter line in the
// backend than the limit lets build up. Its run time lags the limit.
func (g *Gradient) probeLocked(limit int, n float64) int {
	p := &g.probe
	tol := g.c.Tolerance
	full := g.w.full.seen*2 >= g.w.all.seen && len(g.w.full.d) > 0
	over := g.w.over*overShare > g.w.all.seen
	if !full && !over {
		// Light load, or a limit still filling: the run time is the
		// baseline once the running count no longer climbs.
		r := float64(g.w.all.percentile(g.c.Percentile))
		climbing := p.lastN == 0 || n > p.lastN*(1+tol)+1
		p.lastN = n
		if climbing {
			return limit
		}
		p.done = true
		g.levels.add(int(math.Round(n)), r, 1)
		return limit
	}
	p.lastN = 0
	var r float64
	if full {
		r = float64(g.w.full.percentile(g.c.Percentile))
	} else {
		r = float64(g.w.all.percentile(g.c.Percentile))
	}
	p.best = math.Max(p.best, n/r)
	if limit > g.min && (p.last == 0 || r < p.last*(1-tol) || over) {
		// Run times still fall with the limit: there was queueing.
		p.last, p.prev = r, limit
		return max(int(float64(limit)*(1-g.c.MaxDecrease)), g.min)
	}
	// The minimum, or run times that no longer fall: r is the run time
	// of a task that does not queue, and so was the last window's, at
	// the limit before.
	// Both are measures of it, and their mean is less subject to chance.
	p.done = true
	if p.last > 0 {
		r = (r + p.last) / 2
	}
	g.levels.seed(int(math.Round(n)), r)
	return min(max(int(p.best*r*(1+tol/2)), p.prev, g.min), g.max)
}
