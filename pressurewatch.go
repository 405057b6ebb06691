package groupconc

import (
	"slices"
	"sync/atomic"
)

// WatchPressure has fn told every pressure warning of e, as the policy's
// function is (see PolicyBuilder.PressureWarnings). The warnings fire
// whenever fn or any other watcher is there, even when the policy has no
// function. Their thresholds and cooldown are the PressureConfig of the
// policy in force. That is the one PressureWarnings or a policy's JSON
// "pressure" object gave, or the defaults. The policy's function and every
// watcher are told the same warnings, in that order. A warning held back by
// a group's cooldown is held back for all of them.
//
// The fn runs on the goroutine of the Submit call or of the age timer, with
// no lock of the executor held, as the policy's function does. It must not
// block, because Shutdown waits for a call under way. A panic in it is
// recovered and ignored, and the next watcher is still told. Several
// functions may watch at once, and the same function may watch twice.
//
// The stop function removes fn. No warning that fires after stop returns
// reaches fn. A call under way may still run, since stop does not wait for
// it. So fn may call stop, or Close. Calling stop again does nothing.
//
// A nil fn watches nothing, and its stop does nothing. On a nil or zero
// executor, fn is never called. WatchPressure is safe for concurrent use,
// and so is stop.
func (e *GroupExecutor) WatchPressure(fn func(PressureWarning)) (stop func()) {
	if fn == nil || !e.made() {
		return func() {}
	}
	w := &watcher{fn: fn}
	pr := &e.pressure
	pr.mu.Lock()
	var ws []*watcher
	if old := pr.watchers.Load(); old != nil {
		ws = *old
	}
	ws = append(slices.Clip(ws), w)
	pr.watchers.Store(&ws)
	pr.mu.Unlock()
	// Tasks that wait already are warned about, as after UpdatePolicy.
	e.pressureUpdated(e.policy.Load())
	return func() { e.unwatch(w) }
}

// watcher is one function WatchPressure added.
type watcher struct {
	fn      func(PressureWarning)
	stopped atomic.Bool // set by stop: a warning read with the old list skips fn
}

// unwatch takes w out of e's watchers.
func (e *GroupExecutor) unwatch(w *watcher) {
	if w.stopped.Swap(true) {
		return
	}
	pr := &e.pressure
	pr.mu.Lock()
	defer pr.mu.Unlock()
	ws := slices.DeleteFunc(slices.Clone(*pr.watchers.Load()), func(x *watcher) bool { return x == w })
	if len(ws) == 0 {
		pr.watchers.Store(nil)
		return
	}
	pr.watchers.Store(&ws)
}

// pressureWatched reports whether a warning under p has anyone to tell.
func (e *GroupExecutor) pressureWatched(p *GroupPolicy) bool {
	return p.pressureFn != nil || e.pressure.watchers.Load() != nil
}

// tell calls each watcher's function with w.
func (pr *pressure) tell(w PressureWarning) {
	ws := pr.watchers.Load()
	if ws == nil {
		return
	}
	for _, x := range *ws {
		if !x.stopped.Load() {
			callPressureFn(x.fn, w)
		}
	}
}
