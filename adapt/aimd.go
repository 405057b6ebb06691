package adapt

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kobe/groupconc"
)

// AIMDConfig configures an AIMD. A field that is zero, or out of its
// range, takes its default.
type AIMDConfig struct {
	// Backoff multiplies the limit on a sign of overload, in (0, 1). 0
	// means 0.9.
	Backoff float64
	// Increase is what the limit gains per limit's worth of healthy
	// samples, about one per run time at a busy limit. 0 means 1.
	Increase float64
	// Timeout, if set, makes a healthy sample whose run time exceeds it
	// a sign of overload.
	Timeout time.Duration
	// Utilisation is how busy the limit must be for it to rise. A sample
	// raises it only if the running count at its start was at least
	// Utilisation × the limit then. 0 means 0.5.
	Utilisation float64
	// Classify says what a sample means. nil means FailuresOverload.
	Classify func(groupconc.LimitSample) Signal
	// Window is how long the samples are counted by group, for a limit
	// that takes several groups' samples, the global cap. Such a limit
	// falls only on overload the groups share (see the package doc). 0
	// means 100ms.
	Window time.Duration
}

func (c AIMDConfig) withDefaults() AIMDConfig {
	orFraction(&c.Backoff, 0.9, false)
	if !(c.Increase > 0) || math.IsInf(c.Increase, 0) {
		c.Increase = 1
	}
	orFraction(&c.Utilisation, 0.5, true)
	orDuration(&c.Window, 100*time.Millisecond)
	return c
}

// New returns an AIMD of c that moves within [lo, hi]. It has the type of
// groupconc.AdaptiveConfig.New.
func (c AIMDConfig) New(_ string, lo, hi int) groupconc.AdaptiveLimit {
	return NewAIMD(lo, hi, c)
}

// AIMD is an additive-increase, multiplicative-decrease limit, as TCP's
// congestion window. Each healthy sample of a busy limit adds
// Increase/limit, so the limit gains about Increase per run time. Each
// sign of overload multiplies it by Backoff. That is a timeout, by default
// a failure, or a run time above Timeout. A sign of overload from a task
// that started under a higher limit than the present one was acted on
// already. So the limit falls at most once per run time.
//
// Under AdaptiveGlobal it takes every group's samples, and falls only on
// overload the groups share (see tally).
//
// An AIMD is safe for concurrent use. Make one with NewAIMD, or
// AIMDConfig.New. Its zero value is not usable.
type AIMD struct {
	c      AIMDConfig
	lo, hi float64
	top    int // hi, exactly: float64(hi) may round up past it
	limit  atomic.Int64

	mu    sync.Mutex
	cur   float64 // guarded by mu: the limit, before rounding down
	start int64   // guarded by mu: when the tally's window began, Unix nanoseconds
	tally tally   // guarded by mu
}

// NewAIMD returns an AIMD of c that moves within [lo, hi] (lo at least 1)
// and starts at hi.
func NewAIMD(lo, hi int, c AIMDConfig) *AIMD {
	lo = max(lo, 1)
	hi = max(lo, hi)
	a := &AIMD{c: c.withDefaults(), lo: float64(lo), hi: float64(hi), top: hi, cur: float64(hi)}
	a.limit.Store(int64(hi))
	return a
}

// Limit returns the limit a wants now.
func (a *AIMD) Limit() int { return int(a.limit.Load()) }

// Observe takes one sample and returns the limit a wants.
func (a *AIMD) Observe(s groupconc.LimitSample) int {
	var sig Signal
	if a.c.Classify == nil {
		sig = classifyFailures(&s)
	} else {
		sig = a.c.Classify(s)
	}
	if sig == Measure && a.c.Timeout > 0 && s.RunTime > a.c.Timeout {
		sig = Overload
	}
	end := s.End.UnixNano()
	a.mu.Lock()
	if end-a.start >= int64(a.c.Window) {
		// Overload is judged by run times in Timeout, not by the mean.
		a.tally.close(math.Inf(1))
		a.start = end
	}
	if sig != Ignore {
		a.tally.add(voter(&s), s.RunTime, sig)
	}
	limit := a.floorLocked()
	switch {
	case sig == Overload && s.Limit <= limit && !a.tally.quietNow():
		a.cur = max(a.cur*a.c.Backoff, a.lo)
	case sig == Measure && float64(s.Running) >= a.c.Utilisation*float64(s.Limit) && limit < a.top:
		a.cur = min(a.cur+a.c.Increase/a.cur, a.hi)
	default:
		a.mu.Unlock()
		return limit
	}
	limit = a.floorLocked()
	a.limit.Store(int64(limit))
	a.mu.Unlock()
	return limit
}

// floorLocked returns the limit a.cur stands for, rounded down. Within a
// few hundred of math.MaxInt, float64 rounds hi up to 2^63, which int()
// does not hold: the limit is then hi.
func (a *AIMD) floorLocked() int {
	if a.cur >= a.hi {
		return a.top
	}
	return int(a.cur)
}
