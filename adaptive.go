package groupconc

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/kobe/groupconc/internal/groupstate"
)

// A LimitSample is what one finished task tells an adaptive limit: how
// long it ran, how it ended, and how loaded its limit was when it started.
// Only tasks that ran holding their permits are sampled. A task rejected,
// run by RejectCallerRuns or by a handler, or cancelled before it started
// tells nothing.
type LimitSample struct {
	GroupKey string
	// TopGroupKey is the key of the group's top-level ancestor, or
	// GroupKey for a group without a parent. Under fair share the global
	// cap is shared among the top-level groups. An algorithm of the cap
	// tells their overload apart by it, as adapt's do.
	TopGroupKey string
	// Status is SUCCESS, FAILED or CANCELLED, as the task's function
	// ended (a task whose handle Cancel completed reports what its
	// function returned).
	Status TaskStatus
	Err    error // the function's error; nil on SUCCESS
	// RunTime is from the task's start, holding every permit, to its
	// end. Its wait in line is not in it.
	RunTime time.Duration
	// Running and Limit are the running tasks (itself included) and the
	// limit in force when the task started. They are its group's, or for
	// the global cap those of every group. Running is in permits, as the
	// limit is, for the global cap too. A task of cost c counts c. A
	// parent's counts its subtree's running tasks, which hold its limit.
	// A limit that holds a task back counts as full: Running is then at
	// least Limit. With costs, the first task waiting may need more
	// permits than are left, so no more of the limit can be used.
	Running, Limit int
	// Waiting is the tasks of its group waiting in line when it started,
	// for either limit. Tasks waiting while the group runs below its
	// limit are held back by something else, such as the global cap, fair
	// share or a parent group.
	Waiting int
	End     time.Time // when the function returned
}

// An AdaptiveLimit moves one concurrency limit, a group's or the global
// cap, from what finished tasks show. Observe is given each sample and
// returns the limit it wants. The executor keeps it within the bounds the
// AdaptiveConfig sets and applies it as UpdatePolicy applies a limit. A
// raised limit starts waiting tasks at once, a lowered one lets running
// tasks finish and starts no new task until the running count is below it.
//
// Observe is called on the finishing task's goroutine, before it gives its
// permits back and completes its handle, with no lock of the executor held,
// and from several goroutines at once. It must be safe for concurrent use,
// and should be cheap and never block, since every sampled task calls it. A
// panic in it is recovered and ignored, and the limit stays as it is.
type AdaptiveLimit interface {
	Observe(s LimitSample) int
}

// AdaptiveConfig makes a concurrency limit adaptive (see
// PolicyBuilder.AdaptiveConcurrency and AdaptiveGlobal).
type AdaptiveConfig struct {
	// New makes the algorithm of one limit, which moves it within [min,
	// max]. max is the limit the policy resolves, where the adaptive
	// limit starts, and min is Min (at most max). groupKey is empty for
	// the global cap. New is called when a group is created, and for
	// every group when UpdatePolicy resolves its limits again. The
	// adaptive state starts afresh, at the new resolved limit. So it does
	// for an override that sets, changes or drops the group's
	// MaxConcurrency, even to the value it had. One that pauses, resumes
	// or sets a queue threshold carries it on. A panic in
	// New, or a nil result, leaves that limit fixed at what the policy
	// resolves.
	New func(groupKey string, min, max int) AdaptiveLimit
	// Min is the least the limit may fall to. 0 means 1.
	Min int
	// QueueFactor, if positive, makes a group's queue threshold follow
	// its limit: ceil(QueueFactor × limit), never above the threshold the
	// policy resolves. Then work the limit sheds is turned away rather
	// than left waiting in the group's queue. 0 keeps the resolved
	// threshold. It must be 0 for AdaptiveGlobal.
	QueueFactor float64
}

// A LimitChange is one change of an adaptive limit (see LimitChanges).
type LimitChange struct {
	GroupKey string    // empty for the global cap
	Old, New int       // the limit before and after
	At       time.Time // the end of the task whose sample moved it
}

// AdaptiveConcurrency makes each group's concurrency limit adaptive. It
// starts at the limit the policy resolves and moves within [c.Min, that
// limit] as c.New's algorithm decides from each finished task's sample.
// GroupStats shows the limit in force as MaxConcurrency, and the queue
// threshold in force as QueueThreshold. A group whose concurrency resolves
// to Unlimited keeps it, since an adaptive limit needs one to start from. A
// group's algorithm is given the samples of its own tasks, so a parent
// that runs none of its own keeps its limit.
//
// c.New must not be nil, and c.Min and c.QueueFactor must be >= 0.
func (b *PolicyBuilder) AdaptiveConcurrency(c AdaptiveConfig) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.adaptive = &c
	return b
}

// AdaptiveGlobal makes the global cap adaptive, as AdaptiveConcurrency does
// a group's. It starts at GlobalMaxInFlight and moves within [c.Min,
// GlobalMaxInFlight] from the samples of every group's tasks. Stats shows it
// as GlobalMaxInFlight. It needs IsolationFairShare, where only running
// tasks hold a global permit (under IsolationOff tasks waiting for their
// group hold one too, so the cap does not bound the work in progress), and
// a GlobalMaxInFlight other than Unlimited.
//
// c.New must not be nil, c.Min must be >= 0 and c.QueueFactor 0.
func (b *PolicyBuilder) AdaptiveGlobal(c AdaptiveConfig) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.adaptiveGlobal = &c
	return b
}

// LimitChanges has fn told of every change an adaptive limit makes, after
// it is in force. fn runs on the goroutine of the task whose sample made
// the change, with no lock of the executor held, possibly on several
// goroutines at once. It must not block. A panic in it is recovered and
// ignored. Changes made by UpdatePolicy are not told, as they are the
// caller's. The tasks of an evicted group that still run change no
// group's limit: its key names another group by then, or none.
func (b *PolicyBuilder) LimitChanges(fn func(LimitChange)) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.limitChanges = fn
	return b
}

// checkAdaptive returns one line per bad adaptive setting of p.
func (p *GroupPolicy) checkAdaptive() []string {
	var bad []string
	check := func(name string, c *AdaptiveConfig) {
		if c == nil {
			return
		}
		if c.New == nil {
			bad = append(bad, name+".New is nil")
		}
		if c.Min < 0 {
			bad = append(bad, fmt.Sprintf("%s.Min is %d, want >= 0", name, c.Min))
		}
		if !(c.QueueFactor >= 0) || math.IsInf(c.QueueFactor, 0) {
			bad = append(bad, fmt.Sprintf("%s.QueueFactor is %v, want a finite number >= 0", name, c.QueueFactor))
		}
	}
	check("AdaptiveConcurrency", p.adaptive)
	check("AdaptiveGlobal", p.adaptiveGlobal)
	if c := p.adaptiveGlobal; c != nil {
		if c.QueueFactor != 0 {
			bad = append(bad, fmt.Sprintf("AdaptiveGlobal.QueueFactor is %v, want 0: the group thresholds bound the global wait", c.QueueFactor))
		}
		if p.isolation != IsolationFairShare {
			bad = append(bad, fmt.Sprintf("AdaptiveGlobal needs Isolation(IsolationFairShare), have %v", p.isolation))
		}
		if p.globalInFlight == Unlimited {
			bad = append(bad, "AdaptiveGlobal needs a GlobalMaxInFlight to start from, have Unlimited")
		}
	}
	return bad
}

// tuning is one adaptive limit. It is a group's concurrency, kept in its
// groupstate.Limits, or the global cap, kept by the executor.
type tuning struct {
	algo     AdaptiveLimit
	min, max int
	factor   float64 // QueueFactor
	// queueMax is the resolved queue threshold. An override may change it
	// (see carry), under the registry's change of limits, which no Tune
	// overlaps. It is read by queue, which Tune calls.
	queueMax atomic.Int64
}

// newTuning makes the tuning of the limit max (resolved) for key ("" for
// the global cap), or returns nil if there is none.
func newTuning(c *AdaptiveConfig, key string, max, queueMax int) (tu *tuning) {
	if c == nil || max == Unlimited {
		return nil
	}
	lo := min(c.Min, max)
	if lo < 1 {
		lo = 1
	}
	defer func() {
		if recover() != nil {
			tu = nil
		}
	}()
	algo := c.New(key, lo, max)
	if algo == nil {
		return nil
	}
	tu = &tuning{algo: algo, min: lo, max: max, factor: c.QueueFactor}
	tu.queueMax.Store(int64(queueMax))
	return tu
}

// tuned reports whether p makes a limit adaptive.
func (p *GroupPolicy) tuned() bool { return p.adaptive != nil || p.adaptiveGlobal != nil }

// tuneLimits makes l, resolved for key, adaptive if p says so. It starts
// at the resolved concurrency, with the queue threshold that follows it.
func (p *GroupPolicy) tuneLimits(l *groupstate.Limits, key string) {
	if tu := newTuning(p.adaptive, key, l.Concurrency, l.QueueThreshold); tu != nil {
		l.Tuning = tu
		l.QueueThreshold = tu.queue(l.Concurrency)
	}
}

// clamp returns n within the tuning's bounds.
func (tu *tuning) clamp(n int) int { return min(max(n, tu.min), tu.max) }
