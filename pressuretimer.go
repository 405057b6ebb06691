package groupconc

// The age timer of pressure warnings (see PressureWarnings) is armed only
// while tasks wait. Beside it is the count of its checks and of calls of the
// warning functions under way. Shutdown waits for those.

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/kobe/groupconc/internal/groupstate"
)

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

	// watchers are the functions WatchPressure added, nil for none.
	// Written under mu, a new slice each time, so warn reads it without mu.
	watchers atomic.Pointer[[]*watcher]
}

// pressureUpdated arms the age timer for p, which UpdatePolicy has just made
// the policy, if tasks wait. It fires when the oldest of them reaches p's
// BacklogAge. A task that begins to wait from now reads p itself.
func (e *GroupExecutor) pressureUpdated(p *GroupPolicy) {
	if _, waiting, _ := e.global.Counts(); waiting == 0 || !e.pressureWatched(p) {
		return
	}
	now, oldest := e.clock(), int64(0)
	e.groups.Range(func(g *groupstate.Group[task]) bool {
		oldest = max(oldest, g.OldestWait(now))
		return true
	})
	e.armPressure(max(p.pressure.orDefaults().BacklogAge-time.Duration(oldest), 0))
}

// armPressure arms the age timer to fire after d. It brings the timer
// forward if it is armed for later, by a policy UpdatePolicy replaced. The
// check it will run counts as running from the arming. So a timer that has
// fired but whose goroutine has not begun is waited for too.
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

// checkAges is the age timer's function. It warns about each group whose
// oldest waiting task has waited BacklogAge. It arms the timer again for
// BacklogAge/2 while tasks wait. It counts as running from the arming to its
// end, so that Shutdown waits for all of it.
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
	// Even if fn does not return (runtime.Goexit): else no warning by age
	// would come again.
	defer e.rearmPressure()
	p := e.policy.Load()
	cfg := p.pressure.orDefaults()
	if e.pressureWatched(p) {
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
}

// rearmPressure ends a check of ages: it clears armed, and arms the timer
// again while tasks wait.
func (e *GroupExecutor) rearmPressure() {
	pr := &e.pressure
	pr.mu.Lock()
	pr.armed = false
	pr.mu.Unlock()
	// A task that began to wait while armed was still set left the timer to
	// this call, since it counted itself waiting before it looked. So did an
	// UpdatePolicy that found it fired, having stored its policy first.
	p := e.policy.Load()
	if _, waiting, _ := e.global.Counts(); waiting > 0 && e.pressureWatched(p) {
		e.armPressure(max(p.pressure.orDefaults().BacklogAge/2, time.Millisecond))
	}
}

// stopPressure stops the age timer for good. No call of fn starts after it.
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

// pressureDone waits, after stopPressure, until no age check and no call of
// a warning function is under way, and reports true. It reports false if
// stop closes first. Shutdown calls it, and Close does not, so that a
// function may call Close (see PressureWarnings).
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
