package groupconc

import (
	"fmt"
	"sync"
	"time"
	"weak"

	"github.com/kobe/groupconc/internal/groupstate"
)

// PressureConfig sets when a group's backlog is worth a warning. A zero
// field takes its default. The count and age are of a group's own waiting
// tasks, wherever they wait: a parent is warned about for tasks of its
// own, not for its subtree's (its children are, each by its own).
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

// PressureWarnings has fn told when a group's backlog crosses a threshold of
// cfg. That happens when a task starts waiting and its group then has at
// least BacklogCount tasks waiting, at any layer. It also happens when the
// group's oldest waiting task has waited BacklogAge. One timer checks the
// age every BacklogAge/2, armed only while tasks wait. So a group that
// receives nothing new is warned about by the time its oldest task has
// waited 1.5×BacklogAge. UpdatePolicy arms it for when the oldest task
// reaches the new BacklogAge. Per group, at most one warning is given per
// Cooldown. The triggers in between are counted into the next warning's
// Suppressed.
//
// The fn runs on the goroutine of the Submit call or of the timer, with no
// lock of the executor held. It must not block, because Shutdown waits for
// a call under way. No call starts once Shutdown or Close has returned.
// Close does not wait for a call under way, so fn may call it. Shutdown
// called from fn would wait for fn itself. Start it on a goroutine of its
// own there. A panic in fn is recovered and ignored. A nil fn disables the
// policy's own warnings. GroupExecutor.WatchPressure adds functions to an
// executor. The fields of cfg must be >= 0.
//
// It sets both the config and fn. To add fn to a config that ParsePolicy
// read, call PressureWarningFunc instead.
func (b *PolicyBuilder) PressureWarnings(cfg PressureConfig, fn func(PressureWarning)) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.pressure, b.pressureFn = cfg, fn
	return b
}

// PressureWarningFunc sets the function told of backlog warnings (see
// PressureWarnings). It keeps the config the builder has. That is the one a
// policy's JSON "pressure" object gave ParsePolicy, or the defaults. The
// JSON form holds the config only, and the function comes from code.
func (b *PolicyBuilder) PressureWarningFunc(fn func(PressureWarning)) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.pressureFn = fn
	return b
}

// pressureState is one group's cooldown.
type pressureState struct {
	mu sync.Mutex
	// g is the group it counts for, guarded by mu. A key's group made
	// again after an eviction or idle forgetting starts afresh. It is
	// weak, so a group gone is not kept for its state.
	g          weak.Pointer[groupstate.Group[task]]
	fired      bool      // guarded by mu
	last       time.Time // guarded by mu; when the last warning fired
	suppressed int       // guarded by mu
}

// pressureWaiting is called when a task of g started waiting, inside
// Submit.
func (e *GroupExecutor) pressureWaiting(g *groupstate.Group[task]) {
	p := e.policy.Load()
	if !e.pressureWatched(p) {
		return
	}
	cfg := p.pressure.orDefaults()
	// Armed before fn is called, which may not return (runtime.Goexit).
	e.armPressure(cfg.BacklogAge)
	if _, waiting, _ := g.Counts(); waiting >= cfg.BacklogCount {
		e.warn(p, g, TriggerBacklogCount)
	}
}

// warn tells p's function and e's watchers about g, unless g's cooldown
// holds it back.
func (e *GroupExecutor) warn(p *GroupPolicy, g *groupstate.Group[task], trigger PressureTrigger) {
	v, ok := e.pressure.states.Load(g.Key())
	if !ok {
		v, _ = e.pressure.states.LoadOrStore(g.Key(), new(pressureState))
	}
	st := v.(*pressureState)
	now := time.Now()
	st.mu.Lock()
	if wg := weak.Make(g); st.g != wg {
		st.g, st.fired, st.suppressed = wg, false, 0
	}
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
	if p.pressureFn != nil {
		callPressureFn(p.pressureFn, w)
	}
	e.pressure.tell(w)
}

// callPressureFn calls fn with w, recovering a panic.
func callPressureFn(fn func(PressureWarning), w PressureWarning) {
	defer ignorePanic()
	fn(w)
}
