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

// sampling is what a task running under adaptive limits notes as it
// starts, for the sample it gives when it ends.
type sampling struct {
	group, global              *tuning
	running, limit, waiting    int // its group's
	globalRunning, globalLimit int
}

// runSampled is run for t, which holds every permit, under a policy with
// adaptive limits. It notes the load of t's group and of the global layer
// at t's start, and gives t's sample as it ends, before it gives its
// permits back, so that a limit it lowers applies to its own permit too.
// It is run's twin rather than a part of it, so that run's frame, under
// every task's function, stays as small as without adaptive limits.
func (e *GroupExecutor) runSampled(r *runner, t *task, start int64) (ended int64) {
	var s sampling
	g := t.permits.Group()
	s.group, _ = g.Tuning().(*tuning)
	if s.group != nil {
		// In permits, as the limit is (see LimitSample.Running).
		s.running, s.limit = g.RunningCost()+g.SubtreeCost(), g.Concurrency()
		if g.Binds() {
			s.running = max(s.running, s.limit)
		}
	}
	if s.global = e.globalTuning.Load(); s.global != nil {
		s.globalRunning, s.globalLimit = e.global.RunningCost(), e.global.Limit()
		if e.global.Binds() {
			s.globalRunning = max(s.globalRunning, s.globalLimit)
		}
	}
	if s.group == nil && s.global == nil {
		return e.run(r, t, start)
	}
	_, s.waiting, _ = g.Counts()
	t.tell(e.listener(), notifyStarted)
	o := outcome{start: start, told: true, r: r}
	defer e.finish(t, &o)
	t.began(start)
	o.status, o.claimed, o.err = t.body.call(t, t.context())
	ended = e.clock()
	o.end = ended - t.permits.Submitted()
	// Before the deferred finish. A function that called runtime.Goexit,
	// or a Do's function that panicked, does not return here. Its task
	// gives no sample.
	e.sample(t, &o, &s)
	return ended
}

// sample gives t's sample to the adaptive limits noted at its start, and
// applies what they return. t's function returned o, and t still holds its
// permits. So a lowered limit applies to them too, and Shutdown still waits
// for t, so also for the tasks a raised limit hands permits to.
//
// It runs on the task's goroutine, whose stack may still be small (a
// trivial task on a fresh goroutine). Its frame is kept small, and the
// algorithm is called from it directly.
func (e *GroupExecutor) sample(t *task, o *outcome, s *sampling) {
	// A panic in an algorithm leaves the limits as they are, this sample
	// untold to the rest.
	defer ignorePanic()
	ls := LimitSample{
		GroupKey:    t.key(),
		TopGroupKey: topKey(t),
		Status:      o.status,
		Err:         o.err,
		RunTime:     time.Duration(o.end - o.start),
		Waiting:     s.waiting,
		End:         t.at(o.end),
	}
	if tu := s.group; tu != nil {
		ls.Running, ls.Limit = s.running, s.limit
		g := t.permits.Group()
		if n := tu.clamp(tu.algo.Observe(ls)); n != g.Concurrency() {
			e.tuneGroup(g, tu, n, ls.End)
		}
	}
	if tu := s.global; tu != nil {
		ls.Running, ls.Limit = s.globalRunning, s.globalLimit
		if n := tu.clamp(tu.algo.Observe(ls)); n != e.global.Limit() {
			e.tuneGlobal(tu, n, ls.End)
		}
	}
}

// tuneGroup makes n the concurrency limit of g, unless UpdatePolicy
// replaced tu, or g was evicted. An evicted group's tasks that still run
// finish on its limits as they are, and its key names another group by
// now, or none: a change would tell of a limit no live group has.
func (e *GroupExecutor) tuneGroup(g *groupstate.Group[task], tu *tuning, n int, at time.Time) {
	if live, ok := e.groups.Lookup(g.Key()); !ok || live != g {
		return
	}
	if old, c := e.groups.Tune(g, tu, n, tu.queue); c != nil {
		e.applyChanges(c)
		e.tellLimit(LimitChange{GroupKey: g.Key(), Old: old, New: n, At: at})
	}
}

// tuneGlobal makes n the global cap, unless UpdatePolicy replaced tu. A
// change under way holds the update lock, and may wait for user code (a
// guard of overrides, which may wait for this very task). So the task does
// not wait for it. It leaves the cap as it is, for a later sample to tune.
func (e *GroupExecutor) tuneGlobal(tu *tuning, n int, at time.Time) {
	if !e.updating.TryLock() {
		return
	}
	if e.globalTuning.Load() != tu {
		e.updating.Unlock()
		return
	}
	old, c := e.global.TuneGlobal(n)
	e.updating.Unlock()
	if c != nil {
		e.applyChanges(c)
		e.tellLimit(LimitChange{Old: old, New: n, At: at})
	}
}

// tellLimit tells the policy's LimitChanges function of ch.
func (e *GroupExecutor) tellLimit(ch LimitChange) {
	if fn := e.policy.Load().limitChanges; fn != nil {
		defer ignorePanic()
		fn(ch)
	}
}
