package groupconc

import (
	"time"

	"github.com/kobe/groupconc/internal/groupstate"
)

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
