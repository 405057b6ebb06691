package groupconc

import (
	"context"
	"fmt"
)

// Do runs fn on the calling goroutine once it holds the permits that a task
// of groupKey submitted with opts would hold. It returns what fn returns. It
// waits where such a task waits. It uses the same lines, priorities, fair
// share and queue thresholds. With opts.Block it waits for a queue slot as
// SubmitWith does. The permits are given back when fn returns or panics. A
// panic goes on up to the caller, as if fn had been called directly. Do is
// counted and reported as a task (stats, listeners, outcome counters). Its
// task ID is of its own making, "do-" and a number.
//
// The context of fn derives from ctx, as a task's does. So ShutdownGroup,
// EvictGroup, Close and an expired Shutdown cancel it too. If ctx ends
// before the permits are held, Do returns ctx.Err() and fn never runs.
//
// Turned away, Do returns the zero T and a *RejectedError under every
// rejection policy but RejectCallerRuns. That policy runs fn at once without
// permits. A RejectionHandler decides as for a task. Its value is returned
// if it is a T, and Rejection.Run runs fn. Do returns the errors SubmitWith
// returns for bad input, a closed executor or a group stopped while it
// waited.
//
// A Do whose ctx is, or derives from, the context of a running task of e
// runs fn at once under that task's permits. It takes none of its own,
// because waiting for permits its caller may hold could deadlock. It is not
// counted as a task of its own then.
//
// While it waits, a Do holds a goroutine of the executor as its task's
// stand-in. The goroutine runs nothing and ends with fn.
func Do[T any](ctx context.Context, e *GroupExecutor, groupKey string, fn Task[T], opts SubmitOptions) (T, error) {
	var zero T
	if err := e.check(ctx); err != nil {
		return zero, err
	}
	if groupKey == "" || fn == nil {
		return zero, checkTask("", groupKey, "do", fn == nil)
	}
	if err := opts.check(); err != nil {
		return zero, err
	}
	if e.insideTask(ctx) {
		return fn(ctx)
	}
	c := &doCall[T]{held: make(chan context.Context), done: make(chan struct{})}
	id := fmt.Sprintf("do-%d", e.doCalls.Add(1))
	h, err := SubmitWith(ctx, e, groupKey, id, c.stand, opts)
	if err != nil {
		return zero, err
	}
	select {
	case tctx := <-c.held:
		return c.run(h, fn, tctx)
	case <-h.Done():
	}
	// It ended without running fn. It was rejected or cancelled, or a
	// handler's value stands for it.
	r := h.Wait()
	if r.Status == StatusCancelled && ctx.Err() != nil {
		return zero, ctx.Err()
	}
	return r.Value, r.Err
}

// doCall is one Do. Its task's function stands in for fn on the executor's
// goroutine, holding the permits while fn runs on the caller's.
type doCall[T any] struct {
	held chan context.Context // the stand-in sends the task's context once it holds the permits
	done chan struct{}        // closed once fn returned or panicked
	v    T
	err  error
	fail bool // fn did not return: panic or runtime.Goexit
	pv   any  // what fn panicked with
}

// stand is the task's function. It hands the caller the task's context and
// returns what fn returned once it has.
func (c *doCall[T]) stand(ctx context.Context) (T, error) {
	c.held <- ctx
	<-c.done
	if c.fail {
		panic(doPanic{c.pv})
	}
	return c.v, c.err
}

// run calls fn with the task's context, lets the stand-in return, and
// waits for the task to end, so that its permits are back when Do returns.
func (c *doCall[T]) run(h *TaskHandle[T], fn Task[T], ctx context.Context) (T, error) {
	returned := false
	defer func() {
		if returned {
			return
		}
		c.fail, c.pv = true, recover()
		close(c.done)
		h.Wait()
		if c.pv != nil {
			panic(c.pv)
		} // else runtime.Goexit goes on unwinding
	}()
	v, err := fn(ctx)
	returned = true
	c.v, c.err = v, err
	close(c.done)
	h.Wait()
	return v, err
}

// doPanic is what a Do's task reports as its panic value when fn panicked on
// the caller's goroutine. The panic itself went on up there.
type doPanic struct{ v any }

func (p doPanic) String() string { return fmt.Sprintf("panic in Do's fn: %v", p.v) }
