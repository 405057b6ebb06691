package groupstate

import (
	"context"
	"sync/atomic"
	"time"
)

// scope is one generation of a group's cancel scope. Shutdown starts the
// next. It is the parent of the contexts of the tasks submitted in it. It
// is itself the context.Context that Permits.Scope returns.
//
// Most tasks never build a context (see the root package's taskContext).
// Most groups are never shut down. So a scope is only a cause, recorded
// once when it is cancelled, and its root. Err reads those two. The
// standard cancel context behind Done and Value, and so context.Cause, is
// made on first need. It is derived from the root, so that cancelling the
// root reaches it through the standard context tree. A scope never made
// costs the root nothing. BenchmarkGroupFootprint of the benchmarks module
// showed a cancel context made per group to cost more memory, counting its
// closure and its slot in the root's map of children.
type scope struct {
	root  *root
	cause atomic.Pointer[error] // set once, by cancel
	made  atomic.Pointer[made]  // set once, by build
}

// root is what the scopes of a registry derive from. Cancelling its
// context (the executor's Close) cancels every scope.
type root struct{ ctx context.Context }

// made is a scope's standard cancel context.
type made struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// forgotten is the cause of the scope of a group forgotten as idle.
var forgotten = errForgotten

// init makes s a fresh scope of rt. s is not published yet.
func (s *scope) init(rt *root) {
	s.root = rt
}

func newScope(rt *root) *scope {
	s := new(scope)
	s.init(rt)
	return s
}

// cancelled reports whether s itself was cancelled, by cancel and not
// through the root.
func (s *scope) cancelled() bool { return s.cause.Load() != nil }

// cancel cancels s with cause (a pointer to it), unless s or its root was
// cancelled before. The first cause sticks, as with a standard context.
//
// Interleaving: build publishes the made context and then looks for a
// cause. cancel records the cause (mark) and then looks for a made context
// (fire). So one of them sees the other, and the made context is cancelled
// with the cause whichever comes first.
func (s *scope) cancel(cause *error) {
	if s.mark(cause) {
		s.fire()
	}
}

// mark records cause as s's, unless s or its root was cancelled before,
// and reports whether it did. From then on s reads as cancelled to a task
// that checks it. A task blocked on its Done wakes only at fire. So a
// subtree's scopes are all marked before any is fired (cancelScopes).
func (s *scope) mark(cause *error) bool {
	return s.root.ctx.Err() == nil && s.cause.CompareAndSwap(nil, cause)
}

// fire cancels the made context, if any, with the cause mark recorded.
func (s *scope) fire() {
	if m := s.made.Load(); m != nil {
		m.cancel(*s.cause.Load())
	}
}

// cancelScopes cancels each scope of ss that is not nil with cause. It
// marks every one before it fires any. A running task its cancel wakes may
// end at once and hand an ancestor's permit to a waiting task of another
// of the scopes. That task then finds its scope cancelled, and ends
// cancelled without starting.
func cancelScopes(ss []*scope, cause error) {
	marked := ss[:0:0]
	for _, s := range ss {
		if s != nil && s.mark(&cause) {
			marked = append(marked, s)
		}
	}
	for _, s := range marked {
		s.fire()
	}
}

// build returns s's standard cancel context, making it on first use,
// already cancelled if s or its root is.
//
// Whoever finds the cause recorded cancels the context with it before
// returning it, not only whoever made it. This is because one made by
// another goroutine is published a moment before that goroutine cancels
// it. A context derived from it then would read no cause. A task ended by
// its group's Shutdown would see context.Canceled, not ErrGroupShutdown.
func (s *scope) build() *made {
	m := s.made.Load()
	if m == nil {
		m = s.make()
	}
	if c := s.cause.Load(); c != nil {
		m.cancel(*c) // the first cause sticks: a no-op once cancelled
	}
	return m
}

// make makes s's standard cancel context, unless another goroutine did
// meanwhile, and returns the one published.
func (s *scope) make() *made {
	parent := s.root.ctx
	if s.cancelled() {
		// Cancelled before the root was (see cancel). So its own cause,
		// not the root's, is the one to see.
		parent = context.WithoutCancel(parent)
	}
	ctx, cancel := context.WithCancelCause(parent)
	m := &made{ctx: ctx, cancel: cancel}
	if !s.made.CompareAndSwap(nil, m) {
		cancel(nil) // made meanwhile by another: unhook this one from the root
		return s.made.Load()
	}
	return m
}

// Deadline returns the root's deadline.
func (s *scope) Deadline() (time.Time, bool) { return s.root.ctx.Deadline() }

// Done returns the made context's channel.
func (s *scope) Done() <-chan struct{} { return s.build().ctx.Done() }

// Err reports context.Canceled once s or its root is cancelled. As with a
// standard context, Done is closed by the time it does. A made context is
// being cancelled then, by whoever recorded the cause or cancelled the
// root, and Err waits for that.
func (s *scope) Err() error {
	if s.cause.Load() == nil && s.root.ctx.Err() == nil {
		return nil
	}
	if m := s.made.Load(); m != nil {
		<-m.ctx.Done()
	}
	return context.Canceled
}

// Value looks key up in the made context, whose own key context.Cause
// asks for. Other values come from the root.
func (s *scope) Value(key any) any { return s.build().ctx.Value(key) }

func (s *scope) String() string { return "groupconc.groupScope" }
