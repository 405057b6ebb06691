package groupconc

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"time"

	"github.com/kobe/groupconc/internal/groupstate"
)

// PressureConfig sets when a group's backlog is worth a warning. A zero
// field takes its default.
type PressureConfig struct {
	BacklogCount int           // a group with this many tasks waiting; 0 means 1000
	BacklogAge   time.Duration // a group whose oldest waiting task waited this long; 0 means 5s
	Cooldown     time.Duration // at most one warning per group per Cooldown; 0 means 30s
}

func (c PressureConfig) orDefaults() PressureConfig {
	if c.BacklogCount == 0 {
		c.BacklogCount = 1000
	}
	if c.BacklogAge == 0 {
		c.BacklogAge = 5 * time.Second
	}
	if c.Cooldown == 0 {
		c.Cooldown = 30 * time.Second
	}
	return c
}

// PressureTrigger says which threshold a PressureWarning crossed.
type PressureTrigger int

const (
	TriggerBacklogCount PressureTrigger = iota + 1 // PressureConfig.BacklogCount
	TriggerBacklogAge                              // PressureConfig.BacklogAge
)

// String returns "backlog-count" or "backlog-age".
func (t PressureTrigger) String() string {
	switch t {
	case TriggerBacklogCount:
		return "backlog-count"
	case TriggerBacklogAge:
		return "backlog-age"
	}
	return fmt.Sprintf("PressureTrigger(%d)", int(t))
}

// PressureWarning tells that a group's backlog crossed a threshold.
type PressureWarning struct {
	GroupKey   string
	Trigger    PressureTrigger
	Waiting    int           // the group's waiting tasks when it fired
	OldestWait time.Duration // how long its oldest waiting task had waited
	Suppressed int           // triggers held back by the cooldown since the last warning
	At         time.Time
}

// PressureWarnings has fn told when a group's backlog crosses a threshold
// of cfg: when a task starts waiting and its group then has at least
// BacklogCount tasks waiting (at any layer), and when the group's oldest
// waiting task has waited BacklogAge. The age is checked by one timer,
// armed only while tasks wait, every BacklogAge/2, so a group that receives
// nothing new is warned about by the time its oldest task has waited
// 1.5×BacklogAge; UpdatePolicy arms it for when the oldest task reaches
// the new BacklogAge. Per group, at most one warning per Cooldown; the
// triggers in between are counted into the next warning's Suppressed.
//
// fn runs on the goroutine of the Submit call or of the timer, with no lock
// of the executor held; it must not block: Shutdown and Close wait for a
// call under way, and it is not called once they have returned. Called
// from fn, they do not wait for fn. A panic in it is recovered and
// ignored. A nil fn disables warnings. cfg's fields must be >= 0.
//
// It sets both the config and fn; to add fn to a config that ParsePolicy
// read, call PressureWarningFunc instead.
func (b *PolicyBuilder) PressureWarnings(cfg PressureConfig, fn func(PressureWarning)) *PolicyBuilder {
	b.pressure, b.pressureFn = cfg, fn
	return b
}

// PressureWarningFunc sets the function told of backlog warnings (see
// PressureWarnings), keeping the config the builder has: the one a
// policy's JSON "pressure" object gave ParsePolicy, or the defaults. The
// JSON form holds the config only; the function comes from code.
func (b *PolicyBuilder) PressureWarningFunc(fn func(PressureWarning)) *PolicyBuilder {
	b.pressureFn = fn
	return b
}

// pressure raises an executor's warnings. Its zero value is ready to use.
type pressure struct {
	mu      sync.Mutex
	timer   *time.Timer   // guarded by mu; armed while tasks wait
	armed   bool          // guarded by mu
	period  time.Duration // guarded by mu: what the armed timer was armed for
	due     int64         // guarded by mu: when it fires, on the executor's clock
	closed  bool          // guarded by mu: no timer, and no call of fn, after the executor closed
	running int           // guarded by mu: the armed timer's check, and calls of fn under way
	idle    chan struct{} // guarded by mu: made by a waiter, closed when running drops to 0
	states  sync.Map      // group key -> *pressureState, for groups that crossed a threshold
}

// pressureState is one group's cooldown.
type pressureState struct {
	mu         sync.Mutex
	fired      bool      // guarded by mu
	last       time.Time // guarded by mu; when the last warning fired
	suppressed int       // guarded by mu
}

// pressureWaiting is called when a task of g started waiting, inside
// Submit.
func (e *GroupExecutor) pressureWaiting(g *groupstate.Group[task]) {
	p := e.policy.Load()
	if p.pressureFn == nil {
		return
	}
	cfg := p.pressure.orDefaults()
	if _, waiting, _ := g.Counts(); waiting >= cfg.BacklogCount {
		e.warn(p, g, TriggerBacklogCount)
	}
	e.armPressure(cfg.BacklogAge)
}

// pressureUpdated arms the age timer for p, which UpdatePolicy has just
// made the policy, if tasks wait: for when the oldest of them reaches p's
// BacklogAge. A task that begins to wait from now reads p itself.
func (e *GroupExecutor) pressureUpdated(p *GroupPolicy) {
	if _, waiting, _ := e.global.Counts(); waiting == 0 || p.pressureFn == nil {
		return
	}
	now, oldest := e.clock(), int64(0)
	e.groups.Range(func(g *groupstate.Group[task]) bool {
		oldest = max(oldest, g.OldestWait(now))
		return true
	})
	e.armPressure(max(p.pressure.orDefaults().BacklogAge-time.Duration(oldest), 0))
}

// armPressure arms the age timer to fire after d, or brings it forward if
// it is armed for later (by a policy UpdatePolicy replaced). The check it
// will run counts as running from the arming: a timer that has fired but
// whose goroutine has not begun is waited for too.
func (e *GroupExecutor) armPressure(d time.Duration) {
	pr := &e.pressure
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.closed || pr.armed && d >= pr.period {
		return // armed earlier, for no longer: it fires no later than d from now
	}
	due := e.clock() + int64(d)
	switch {
	case !pr.armed:
		pr.armed = true
		pr.running++
	case due >= pr.due || !pr.timer.Stop():
		return // due no later, or fired: its check arms it from the policy then
	}
	// Stopped, the armed timer keeps its count of running.
	pr.period, pr.due = d, due
	if pr.timer == nil {
		pr.timer = time.AfterFunc(d, e.checkAges)
	} else {
		pr.timer.Reset(d)
	}
}

// checkAges is the age timer's function: it warns about each group whose
// oldest waiting task has waited BacklogAge, and arms the timer again for
// BacklogAge/2 while tasks wait. It counts as running from the arming to
// its end, so that Shutdown and Close wait for all of it.
func (e *GroupExecutor) checkAges() {
	pr := &e.pressure
	defer pr.leave()
	pr.mu.Lock()
	closed := pr.closed
	if closed {
		pr.armed = false // the executor closed as the timer fired
	}
	pr.mu.Unlock()
	if closed {
		return
	}
	p := e.policy.Load()
	cfg := p.pressure.orDefaults()
	if p.pressureFn != nil {
		now := e.clock()
		e.groups.Range(func(g *groupstate.Group[task]) bool {
			if time.Duration(g.OldestWait(now)) >= cfg.BacklogAge {
				e.warn(p, g, TriggerBacklogAge)
			}
			return true
		})
	}
	e.pressure.states.Range(func(key, _ any) bool {
		if _, ok := e.groups.Lookup(key.(string)); !ok {
			e.pressure.states.Delete(key) // forgotten or evicted: its cooldown goes too
		}
		return true
	})
	pr.mu.Lock()
	pr.armed = false
	pr.mu.Unlock()
	// A task that began to wait while armed was still set left the timer
	// to this call: it counted itself waiting before it looked. So did an
	// UpdatePolicy that found it fired, having stored its policy first.
	p = e.policy.Load()
	if _, waiting, _ := e.global.Counts(); waiting > 0 && p.pressureFn != nil {
		e.armPressure(max(p.pressure.orDefaults().BacklogAge/2, time.Millisecond))
	}
}

// stopPressure stops the age timer for good; no call of fn starts after it.
func (e *GroupExecutor) stopPressure() {
	pr := &e.pressure
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.closed = true
	// A timer that fired has started its check, which counts itself out.
	if pr.armed && pr.timer.Stop() {
		pr.armed = false
		pr.leaveLocked()
	}
}

// pressureDone waits, after stopPressure, until no age check and no call
// of fn is under way, and reports true; false if stop closes first. Called
// from fn (of any executor), it does not wait: the call it is part of
// could not return first.
func (e *GroupExecutor) pressureDone(stop <-chan struct{}) bool {
	pr := &e.pressure
	pr.mu.Lock()
	if pr.running == 0 {
		pr.mu.Unlock()
		return true
	}
	if pr.idle == nil {
		pr.idle = make(chan struct{})
	}
	idle := pr.idle
	pr.mu.Unlock()
	if inPressureFn() {
		return true
	}
	select {
	case <-idle:
		return true
	case <-stop:
		return false
	}
}

// enter counts a call of fn in, unless the executor closed.
func (pr *pressure) enter() bool {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.closed {
		return false
	}
	pr.running++
	return true
}

// leave counts an age check or a call of fn out.
func (pr *pressure) leave() {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.leaveLocked()
}

func (pr *pressure) leaveLocked() {
	if pr.running--; pr.running == 0 && pr.idle != nil {
		close(pr.idle)
		pr.idle = nil
	}
}

// warn tells p's function about g, unless g's cooldown holds it back.
func (e *GroupExecutor) warn(p *GroupPolicy, g *groupstate.Group[task], trigger PressureTrigger) {
	v, ok := e.pressure.states.Load(g.Key())
	if !ok {
		v, _ = e.pressure.states.LoadOrStore(g.Key(), new(pressureState))
	}
	st := v.(*pressureState)
	now := time.Now()
	st.mu.Lock()
	if st.fired && now.Sub(st.last) < p.pressure.orDefaults().Cooldown {
		st.suppressed++
		st.mu.Unlock()
		return
	}
	_, waiting, _ := g.Counts()
	w := PressureWarning{
		GroupKey:   g.Key(),
		Trigger:    trigger,
		Waiting:    waiting,
		OldestWait: time.Duration(g.OldestWait(e.clock())),
		Suppressed: st.suppressed,
		At:         now,
	}
	st.fired, st.last, st.suppressed = true, now, 0
	st.mu.Unlock()
	if !e.pressure.enter() {
		return // the executor closed: fn is not called any more
	}
	defer e.pressure.leave()
	callPressureFn(p.pressureFn, w)
}

// callPressureFn calls fn with w, recovering a panic. It is the frame that
// inPressureFn looks for.
//
//go:noinline
func callPressureFn(fn func(PressureWarning), w PressureWarning) {
	defer ignorePanic()
	fn(w)
}

// callPressureFnName is callPressureFn's name in a stack trace.
var callPressureFnName = runtime.FuncForPC(reflect.ValueOf(callPressureFn).Pointer()).Name()

// inPressureFn reports whether the calling goroutine is inside a call of a
// pressure warnings' function. Only a Shutdown or Close that finds such a
// call under way asks: the stack is the one way to tell that call from
// its own caller.
func inPressureFn() bool {
	pcs := make([]uintptr, 64)
	for {
		n := runtime.Callers(1, pcs)
		if n < len(pcs) {
			pcs = pcs[:n]
			break
		}
		pcs = make([]uintptr, 2*len(pcs))
	}
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if f.Function == callPressureFnName {
			return true
		}
		if !more {
			return false
		}
	}
}
