package groupconc

import (
	"context"
	"strconv"
	"sync/atomic"
	"unsafe"
)

// doCall is one Do: a task whose function runs on the caller's goroutine.
// It waits in its lines as any task does, as a record. The executor hands it
// to its caller where it would run a task (launch, work). The caller then
// owns it and runs it through runOne, as a goroutine of the executor would.
// A Do that ends without running, in a line or turned away, wakes its caller
// from end. A panic of fn goes on up from where fn panicked, and the task
// ends as it unwinds (see call).
//
// The small fields share one word, which keeps doCall[int] at 224 bytes,
// its size class.
type doCall[T any] struct {
	h  TaskHandle[T] // the task, and the value a handler or fn returned
	fn Task[T]

	// state is doIdle until the caller parks or is woken. The waker writes
	// handed and start first. A caller that parks makes ch first.
	state  atomic.Uint32
	handed bool  // the permits are held: the caller runs the task
	ran    bool  // fn was called by call
	idLen  uint8 // the task ID's length in id, once made
	inside bool  // a Do inside a task: it runs under its caller's permits
	ch     chan struct{}
	start  int64 // when the last permit was held, as runOne takes it

	err error // what fn returned, with h.value; or the *PanicError of its panic

	id [24]byte // the task ID's bytes, made on first need (taskID)
}

// The states of doCall.state.
const (
	doIdle   uint32 = iota // neither parked nor woken yet
	doParked               // the caller waits on ch
	doWoken                // woken before the caller parked
)

// do runs fn on the caller's goroutine as a task of key submitted with o.
// See Do.
func do[T any](ctx context.Context, e *GroupExecutor, key string, fn Task[T], o SubmitOptions) (T, error) {
	c, b := newDoCall(e, fn, o.Cost)
	c.h.t.state.Store(inlineBit)
	// The record is the one allocation of a Do that need not wait. It
	// cannot be reused, because it is fn's context, which fn may keep. The
	// task has no ID until one is asked for (taskID).
	if err := e.submit(ctx, &c.h.t, b, key, "", o); err != nil {
		var zero T
		return zero, err
	}
	if c.wait() {
		r := e.runners.get(&c.h.t)
		defer e.runners.put(r)
		// The tasks its permits go to are carried on here. One that can
		// run gets a goroutine, for this one runs nothing but fn.
		if next, at := e.runOne(r, &c.h.t, c.start, handOffInline); next != nil {
			e.goCarry(next, at)
		}
	}
	return c.result(ctx)
}

// doInside runs fn at once, as a task of key that holds no permits. Its
// caller, a task of e, holds those it would wait for. It is counted and
// reported as any Do. Once Shutdown or Close has begun no new task is
// counted. Then fn runs as a part of the task calling it, unless ctx has
// ended.
func doInside[T any](ctx context.Context, e *GroupExecutor, key string, fn Task[T]) (T, error) {
	c := &doCall[T]{fn: fn, handed: true, inside: true}
	t := &c.h.t
	t.state.Store(inlineBit)
	if _, err := e.enter(ctx, t, c, key, ""); err != nil {
		if err == ErrClosed {
			if err = ctx.Err(); err == nil {
				return fn(ctx) // uncounted, as a part of its caller
			}
		}
		var zero T
		return zero, err
	}
	e.runInside(t)
	return c.result(ctx)
}

// runInside runs t, a Do inside a task, which holds no permits to hand on.
// It ends even if a listener calls runtime.Goexit.
func (e *GroupExecutor) runInside(t *task) {
	defer e.end(t, handOffSpawn, noTime)
	t.tell(e.listener(), notifySubmitted)
	if e.cancelledBeforeRun(t) {
		e.finishCancelled(t)
		return
	}
	e.run(nil, t, 0)
}

// result returns what Do returns once its task ended: what fn returned,
// or the task's result if fn never ran.
func (c *doCall[T]) result(ctx context.Context) (T, error) {
	if c.ran {
		return c.h.value, c.err
	}
	res := c.h.result()
	if res.Status == StatusCancelled && ctx.Err() != nil {
		return res.Value, ctx.Err()
	}
	return res.Value, res.Err
}

// newDoCall returns the record of a Do of fn and cost, and its task's
// body. It is made with room for the task's Ext if it may need one, as a
// handle is (see newHandle).
func newDoCall[T any](e *GroupExecutor, fn Task[T], cost int) (*doCall[T], body) {
	if !e.withExt(cost) {
		c := &doCall[T]{fn: fn}
		return c, c
	}
	r := &roomy[doCall[T]]{rec: doCall[T]{fn: fn}}
	r.x.body = &r.rec
	return &r.rec, &r.x
}

// wait blocks until the executor hands the task to the caller, or ends it
// without running it. It reports whether the task was handed. Only a caller
// that must wait makes a channel.
func (c *doCall[T]) wait() bool {
	if c.state.Load() != doWoken {
		c.ch = make(chan struct{})
		if c.state.CompareAndSwap(doIdle, doParked) {
			<-c.ch
		}
	}
	return c.handed
}

// wake hands the task to its caller, which got its last permit at start, or
// tells the caller it ended without running. Whoever owns the task calls it
// once, and owns it no more after.
func (c *doCall[T]) wake(handed bool, start int64) {
	c.handed, c.start = handed, start
	if !c.state.CompareAndSwap(doIdle, doWoken) {
		close(c.ch) // parked
	}
}

// taskID returns the task's ID, "do-" and a number of e's, made the first
// time a listener, an error or a result needs it. Most Do calls never need
// one. Only the task's owner asks, so the bytes need no lock. They never
// change once made, so the string shares them.
func (c *doCall[T]) taskID(e *GroupExecutor) string {
	if c.idLen == 0 {
		c.idLen = uint8(len(strconv.AppendUint(append(c.id[:0], "do-"...), e.doCalls.Add(1), 10)))
	}
	return unsafe.String(&c.id[0], c.idLen)
}

// borrows reports whether the task is a Do inside a task. It holds no
// permits of its own, but its caller's while the caller runs.
func (c *doCall[T]) borrows() bool { return c.inside }

// ended wakes the caller of a task that ends without being handed to it.
func (c *doCall[T]) ended() {
	if !c.handed {
		c.wake(false, 0)
	}
}

// call calls fn, as fnBody's call does. It keeps what fn returned, even with
// an error, for Do to return. A panic of fn goes on up to Do's caller from
// where fn panicked, with fn's frames on the stack, as if the caller had
// called fn. So call recovers it only to keep its *PanicError, and panics
// again at once, before the stack unwinds. The task then ends as the panic
// unwinds through its owner (run, runOne), as on runtime.Goexit, and finish
// takes the error from unwound.
func (c *doCall[T]) call(t *task, ctx context.Context) (TaskStatus, bool, error) {
	c.ran = true
	returned := false
	defer func() {
		if !returned {
			if r := recover(); r != nil { // nil: runtime.Goexit
				c.err = panicError(r)
				panic(r)
			}
		}
	}()
	v, err := c.fn(ctx)
	returned = true
	claimed := t.claim()
	c.h.value, c.err = v, err
	status, err := statusOf(ctx, nil, err)
	return status, claimed, err
}

// unwound is what fn panicked with, or runtime.Goexit's error.
func (c *doCall[T]) unwound() error {
	if c.err != nil {
		return c.err
	}
	return panicError(nil)
}

// callHandler has the handler decide, as fnBody's does. A panic of fn,
// called through Rejection.Run, that goes on up through the handler goes on
// up to Do's caller too, from where fn panicked (see callHandler).
func (c *doCall[T]) callHandler(t *task, ctx context.Context, h RejectionHandler, l TaskLifecycleListener, o *outcome) {
	callHandler(c.fn, t, ctx, h, l, o)
}

func (c *doCall[T]) tellCompleted(t *task, o outcome, l TaskLifecycleListener) {
	fnBody[T](c.fn).tellCompleted(t, o, l)
}
