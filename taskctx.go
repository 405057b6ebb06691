package groupconc

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// taskContext is the context a task's function sees, which is the task
// itself, seen as a context. Values and deadline come from the caller's
// context. Cancellation comes from the caller's context, the task's group
// scope (ShutdownGroup, EvictGroup, and through it Close) and the task's own
// cancel (Cancel).
//
// Most functions never look at their context's Done channel. So the real
// cancel context behind it, the inner context, is built lazily (in the
// task's aside), by the first Done or Value call. Until then Err is computed
// from the three sources, and a cancel only records its cause, in the task's
// state. The inner context derives from the group scope. So Close and
// ShutdownGroup reach it through the standard context tree, and
// context.Cause sees their cause. This keeps BenchmarkSubmitWait at one
// allocation per task, the handle. A context built per task would add its
// own, and register it with the group scope.
type taskContext task

// context returns t as the context its function sees.
func (t *task) context() *taskContext { return (*taskContext)(t) }

func (c *taskContext) task() *task { return (*task)(c) }

func (c *taskContext) Deadline() (time.Time, bool) { return c.caller.Deadline() }

func (c *taskContext) String() string { return "groupconc.taskContext" }

// Done forwards a caller's cancel itself if the inner context has not
// seen it yet. Its AfterFunc may not have run, and Err may already have
// reported the caller's error. Once Err is not nil, Done is closed, as a
// standard context's is.
func (c *taskContext) Done() <-chan struct{} {
	ctx := c.build()
	if a := c.aside.Load(); c.caller.Err() != nil && ctx.Err() == nil && !(a.timed && c.pastDeadline()) {
		a.cancel(context.Cause(c.caller))
	}
	return ctx.Done()
}

// Err reports the inner context's error once any source has ended, so it
// stays what it first said when another source ends later (the caller's
// deadline after Cancel or ShutdownGroup, the caller's cancel after its
// deadline). A caller's deadline shows as context.DeadlineExceeded rather
// than as the Canceled of a forwarding, since the inner context expires at
// that deadline itself (see build). A context that has not ended costs no
// inner context here.
func (c *taskContext) Err() error {
	if !c.built() && c.caller.Err() == nil && c.state.Load()&cancelledBit == 0 && c.permits.Scope().Err() == nil {
		return nil
	}
	return c.build().Err()
}

// Value looks in the inner context first, so context.Cause finds the task's
// own cause. context.Cause asks for the nearest cancel context by a private key. No
// other key is stored there, so values come from the caller.
func (c *taskContext) Value(key any) any {
	var e *GroupExecutor
	held := false
	switch k := key.(type) {
	case execKey: // see insideTask
		e = k.e
	case heldKey: // see holdsPermits
		e, held = k.e, true
	default:
		if v := c.build().Value(key); v != nil {
			return v
		}
		return c.caller.Value(key)
	}
	if c.state.Load()&overBit != 0 || e != c.task().exec() || held && !c.task().ownsPermits() {
		// Its permits are back: a context kept past its end (as
		// context.WithoutCancel keeps it) is inside no task of its own.
		// Or the key asks for another executor, whose task the caller's
		// context may be, or derive from. Or it asks for permits, and
		// the task has none of its own.
		return c.caller.Value(key)
	}
	return e
}

// build returns the inner cancel context, creating it on first use already
// cancelled if any source has been.
func (c *taskContext) build() context.Context {
	a := c.task().getAside()
	if a.built.Load() {
		return a.ctx
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.built.Load() {
		base, cancel := context.WithCancelCause(c.permits.Scope())
		inner := context.Context(base)
		switch caller := c.caller; {
		case c.state.Load()&cancelledBit != 0 && !c.endsByDeadline():
			cancel(c.cause())
		case caller.Err() != nil && (caller.Err() != context.DeadlineExceeded || caller.Done() == nil):
			// A caller without a Done channel that says it ended breaks
			// the context contract, but it has ended: nothing else will
			// tell the inner context so.
			cancel(context.Cause(caller))
		case caller.Done() == nil:
		default:
			// A context derived from the task's attaches to the inner one,
			// and takes its Err when it is cancelled: Canceled, were the
			// caller's deadline forwarded as a cancel. So the inner context
			// expires at that deadline itself, with DeadlineExceeded and the
			// caller's cause, and the forwarding leaves that end to it.
			var dc *deadlineCause
			dl, timed := caller.Deadline()
			if timed {
				var stop context.CancelFunc
				dc = new(deadlineCause)
				if caller.Err() == context.DeadlineExceeded {
					// Passed already: the inner context expires at once,
					// before the AfterFunc below could tell its cause.
					dc.set(caller)
				}
				inner, stop = context.WithDeadlineCause(base, dl, dc)
				cancelBase := cancel
				cancel = func(cause error) { cancelBase(cause); stop() }
				a.timed = true
			}
			if caller.Err() != nil && inner.Err() == nil {
				// The caller's deadline has passed (its Err says so) but
				// not by the deadline it names: forward its end.
				cancel(context.Cause(caller))
			}
			a.stop = context.AfterFunc(caller, func() {
				if !(timed && c.pastAt(dl)) {
					cancel(context.Cause(caller))
					return
				}
				dc.set(caller)
			})
		}
		a.ctx, a.cancel = inner, cancel
		a.built.Store(true)
	}
	return a.ctx
}

// deadlineCause is the cause of the inner context's own expiry. It is
// context.DeadlineExceeded, and wraps the caller's cause once the caller's
// deadline has passed too (it may pass a moment later). A cancel of the
// caller after that moment does not change it.
type deadlineCause struct {
	cause atomic.Pointer[error] // the caller's cause, once its deadline passed
}

// set records the cause of caller, whose deadline has passed.
func (d *deadlineCause) set(caller context.Context) {
	err := context.Cause(caller)
	d.cause.Store(&err)
}

func (d *deadlineCause) Error() string {
	if p := d.cause.Load(); p != nil {
		return (*p).Error()
	}
	return context.DeadlineExceeded.Error()
}

// Is reports that the cause is context.DeadlineExceeded, whatever the
// caller's own cause says.
func (d *deadlineCause) Is(target error) bool { return target == context.DeadlineExceeded }

// Unwrap returns the caller's cause, once known.
func (d *deadlineCause) Unwrap() error {
	if p := d.cause.Load(); p != nil {
		return *p
	}
	return nil
}

// built reports whether the inner context exists.
func (c *taskContext) built() bool {
	a := c.aside.Load()
	return a != nil && a.built.Load()
}

// cause returns the own cancel's cause. Call it only once cancelledBit is
// set.
func (c *taskContext) cause() error {
	if c.state.Load()&asideCause != 0 {
		return *c.aside.Load().cause.Load()
	}
	return context.Canceled
}

// cancelWith cancels the context with cause, and the first cause sticks. A
// context never built only records the cause. The cause is kept aside even
// when the context was closed first, for the result (cancelCause). A cause
// of context.Canceled costs one bit of the state, and another cause is kept
// aside.
func (c *taskContext) cancelWith(cause error) {
	bits := cancelledBit
	if cause != context.Canceled {
		p := new(error)
		*p = cause
		c.task().getAside().cause.CompareAndSwap(nil, p)
		bits |= asideCause
	}
	for {
		s := c.state.Load()
		if s&cancelledBit != 0 || c.state.CompareAndSwap(s, s|bits) {
			break
		}
	}
	c.cancelBuilt()
}

// cancelBuilt cancels the inner context with the recorded cause, if it is
// built. It is called after the cause is recorded. So a build that comes
// later sees the cause, and one under way holds mu until its context is set.
func (c *taskContext) cancelBuilt() {
	a := c.aside.Load()
	if a == nil {
		return
	}
	a.mu.Lock()
	built := a.built.Load()
	a.mu.Unlock()
	if built && !(a.timed && c.endsByDeadline()) {
		a.cancel(c.cause())
	}
}

// pastDeadline reports whether the caller has ended by the deadline it
// names. The inner context meets that end by a deadline of its own (see
// build), already due, and ends with context.DeadlineExceeded, as a
// forwarded cancel would not.
//
// Once the inner context expires by itself, the deadline is the one it
// took from the caller then: a caller whose Deadline changes (as the
// context contract forbids) must not leave it open past the caller's end.
func (c *taskContext) pastDeadline() bool {
	if a := c.aside.Load(); a != nil && a.built.Load() && a.timed {
		dl, _ := a.ctx.Deadline()
		return c.pastAt(dl)
	}
	dl, ok := c.caller.Deadline()
	return ok && c.pastAt(dl)
}

// pastAt reports whether the caller has ended by its deadline and dl has
// passed.
func (c *taskContext) pastAt(dl time.Time) bool {
	return c.caller.Err() == context.DeadlineExceeded && !time.Now().Before(dl)
}

// endsByDeadline reports whether the task's recorded cause is the
// caller's deadline, passed. ExecuteAll cancels its tasks so when its
// context ends. The inner context meets that end itself (pastDeadline).
func (c *taskContext) endsByDeadline() bool {
	return c.pastDeadline() && errors.Is(c.cause(), context.DeadlineExceeded)
}

// watch arranges for f to run, on a goroutine of its own, when the caller's
// context ends, until the context is closed. A caller's context that never
// ends costs nothing here.
func (c *taskContext) watch(f func()) {
	if c.caller.Done() == nil {
		return
	}
	a := c.task().getAside()
	a.mu.Lock()
	// The caller's context runs code of its own in AfterFunc. If that
	// panics, mu must still be let go: the task is in a line by now.
	defer a.mu.Unlock()
	// close sets overBit before it looks for the aside. So either it finds
	// the aside, and takes mu after this, or overBit is seen here.
	if c.state.Load()&overBit == 0 {
		a.unwatch = context.AfterFunc(c.caller, f)
	}
}

// close cancels the context once the task is over, and unhooks it from the
// caller's context and the group scope so neither keeps it. A context never
// built, nor watched, costs one atomic operation here.
func (c *taskContext) close() {
	c.state.Or(cancelledBit | overBit) // the cause is context.Canceled unless one was set
	a := c.aside.Load()
	if a == nil {
		return
	}
	a.mu.Lock()
	built, unwatch := a.built.Load(), a.unwatch
	a.mu.Unlock()
	if unwatch != nil {
		unwatch()
	}
	if built {
		a.cancel(c.cause())
		if a.stop != nil {
			a.stop()
		}
	}
}
