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
	// Window is the least time one window of samples spans. The limit
	// moves at most once per window. 0 means 100ms.
	Window time.Duration
	// MinSamples is the least samples a window holds. A window whose time
	// is up waits for them. 0 means 20.
	MinSamples int
	// Percentile is the quantile of a window's run times that is compared
	// with the baseline, in (0, 1). 0 means 0.5, the median, which a few
	// slow tasks do not move.
	Percentile float64
	// Tolerance is how much slower than the baseline a window may run
	// before it counts as slow. The limit falls above (1+Tolerance) ×
	// the baseline, plus the window's noise. It may rise below
	// (1+Tolerance/2) × the baseline. 0 means 0.1.
	Tolerance float64
	// Utilisation is how busy the limit must be for it to rise. The mean
	// running count at the start of a window's tasks must be at least
	// Utilisation × the limit. So a limit that the load does not fill
	// does not grow. 0 means 0.75.
	Utilisation float64
	// MaxDecrease is the largest fraction of the limit one window may
	// take off. 0 means 0.5.
	MaxDecrease float64
	// Smoothing is the weight of a window in the moving average of the
	// run time at its concurrency. The least of these averages is the
	// baseline. 0 means 0.25.
	Smoothing float64
	// BaselineAge is how many windows the run time seen at one
	// concurrency counts towards the baseline without being seen again.
	// 0 means 100.
	BaselineAge int
	// Reprobe is how many windows the limit may sit at its minimum while
	// its run times stay slow. Then the latest window's run time becomes
	// the baseline, and the limit may rise again. The backend got slower,
	// not busier. So it does after as many busy windows in a row there
	// that run too slow to rise but not slow enough to fall: the
	// baseline, the least of several averages, is low. 0 means 5.
	Reprobe int
	// Patience is how many windows in a row must run slow before a limit
	// that does not bind falls. One slow window may be a burst. Several
	// in a row show a backend that queues. 0 means 3.
	Patience int
	// HeldPatience is how many windows in a row must run slow before a
	// limit held back by other groups falls. The other groups may be what
	// slows the backend, and an adaptive global cap acts on that first.
	// Slowness that outlasts it is the group's own. 0 means 10.
	HeldPatience int
	// Resolution is the shortest run time told apart. Shorter ones count
	// as it, so scheduling noise in very short tasks does not move the
	// limit. 0 means 100µs.
	Resolution time.Duration
	// Classify says what a sample means. nil means DefaultClassify. The
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

// New returns a Gradient of c that moves within [lo, hi]. It has the type
// of groupconc.AdaptiveConfig.New.
func (c GradientConfig) New(_ string, lo, hi int) groupconc.AdaptiveLimit {
	return NewGradient(lo, hi, c)
}

// Gradient is a limit that follows the run times of its tasks. It keeps a
// baseline, the run time of a task that does not queue in the backend. It
// compares a percentile of each window's run times with it.
//
// A window that ran slower than the baseline allows ran at a concurrency
// the backend could not serve at once. The limit falls to that concurrency
// scaled down by the slowdown. Under processor sharing that is the
// backend's capacity. A limit the load does not fill falls too, towards
// the concurrency the backend served. It waits for Patience slow windows
// first, since one may be a burst. A window in which over one task in ten
// ran out its deadline is overloaded, however few tasks ran. A window
// close to the baseline, at a busy limit, raises the limit by Tolerance of
// itself, at least one.
//
// A group is held back when most of its tasks started with tasks of it
// waiting while it ran below its limit. The global cap, fair share or a
// parent group held them, and the samples' Waiting, Running and Limit
// show it. Such a limit falls only after HeldPatience slow windows.
//
// A Gradient starts at max. If its first windows are busy, it measures
// the baseline by halving the limit each window until the run times stop
// falling. It judges each step only by tasks that started at a full
// limit. The others found a shorter line in the backend. From then on the
// baseline is the least of the run times seen at the concurrencies the
// limit ran at lately, each averaged over its windows (see levels).
//
// Under AdaptiveGlobal it takes every group's samples, and falls only on
// overload the groups share (see tally).
//
// A Gradient is safe for concurrent use. Make one with NewGradient, or
// GradientConfig.New. Its zero value is not usable.
type Gradient struct {
	c        GradientConfig
	min, max int
	limit    atomic.Int64

	mu     sync.Mutex
	w      window // guarded by mu
	levels levels // guarded by mu
	probe  probe  // guarded by mu, until the baseline is first measured
	atMin  int    // guarded by mu. Windows in a row at min and slow.
	stuck  int    // guarded by mu. Busy windows in a row at min, neither cut nor raised.
	slow   int    // guarded by mu. Windows in a row slow or overloaded.
	tally  tally  // guarded by mu
}

// NewGradient returns a Gradient of c that moves within [lo, hi] and
// starts at hi. lo is at least 1.
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

// record adds a sample to the window and returns the limit. If the sample
// closes the window, the window is decided on first. Observe's caller
// runs on a small stack (see groupconc's sample). So the frames on this
// path stay small, and the decision, once per window, is a call away.
func (g *Gradient) record(s *groupconc.LimitSample, sig Signal) int {
	end, run := s.End.UnixNano(), max(s.RunTime, g.c.Resolution)
	g.mu.Lock()
	if g.w.all.seen > 0 && g.w.due(end, g.c.Window, g.c.MinSamples) {
		g.closeLocked()
	}
	g.w.add(end, run, s.Running, s.Limit, sig, s.Waiting > 0 && s.Running < s.Limit)
	g.tally.add(voter(s), run, sig)
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
	// Under AdaptiveGlobal, overload that only some groups see is
	// theirs. Their own limits act on it, not the cap.
	shared := g.tally.close(2 * tol)
	if !g.probe.done {
		return g.probeLocked(limit, n, shared)
	}
	r := float64(g.w.all.percentile(g.c.Percentile))
	g.levels.add(int(math.Round(n)), r, g.c.Smoothing)
	ratio := r / g.levels.baseline(g.c.BaselineAge)
	margin := tol + g.noiseLocked(r)
	// Deadlines that passed are overload, whatever the running count.
	// The callers gave up, but the backend may still work on their calls.
	// So the running count says less than the backend has to do.
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
		// backend. An adaptive global cap acts first.
		slow = g.slow >= g.c.HeldPatience
	case over:
	case slow && n < bound*float64(limit):
		// The limit does not bind. A burst may have slowed this window.
		// So the limit falls only once the run times stay slow.
		slow = g.slow >= g.c.Patience
	case slow:
		// One window slower than its noise allows may still be chance.
		// Two in a row, or one far slower, are not.
		slow = g.slow >= 2 || ratio > 1+2*margin
	}
	switch {
	case over && g.w.held*2 <= g.w.all.seen || slow:
		g.stuck = 0
		if limit == g.min && !over {
			g.rebase(&g.atMin, n, r) // the backend got slower, not busier
			return limit
		}
		g.atMin = 0
		// A limit that does not bind falls too. The run times show
		// that the backend queues at the concurrency it now serves.
		base := min(n, float64(limit))
		target := int(math.Round(base * (1 + tol/2) / max(ratio, 1+margin)))
		floor := int(math.Ceil(base * (1 - g.c.MaxDecrease)))
		return max(min(max(target, floor), limit-1), g.min)
	case ratio < 1+tol/2 && n >= g.c.Utilisation*float64(limit) && (g.w.over == 0 || !shared):
		g.atMin, g.stuck = 0, 0
		return min(limit+max(1, int(math.Round(float64(limit)*tol))), g.max)
	}
	g.atMin = 0
	if limit == g.min && n >= g.c.Utilisation*float64(limit) && !over && g.w.held*2 <= g.w.all.seen {
		// Busy at the minimum, and neither slow nor close enough to the
		// baseline to rise. The baseline is the least of several
		// averages, so biased low, and may be older than the backend's
		// recovery. At the minimum the group queues least, so its run
		// time there is the baseline now.
		g.rebase(&g.stuck, n, r)
		return limit
	}
	g.stuck = 0
	return limit
}

// rebase counts one more window in *count. At Reprobe of them the
// latest window's run time r, at n running, becomes the baseline.
func (g *Gradient) rebase(count *int, n, r float64) {
	if *count++; *count >= g.c.Reprobe {
		g.levels.reset()
		g.levels.add(int(math.Round(n)), r, 1)
		*count = 0
	}
}
