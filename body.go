package groupconc

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"sync"
	"time"
	"unsafe"
)

var errGoexit = errors.New("groupconc: runtime.Goexit called on the task's goroutine")

// body is the typed side of a task t, implemented by fnBody[T]. Its methods
// are given t. The scheduler is not generic. It drives a task through its
// layers and calls body only to run typed code. body never completes the
// handle nor gives back permits. It returns how the code ended, and the
// scheduler does the rest (see GroupExecutor.finish).
type body interface {
	// call calls the task's function on the calling goroutine and returns
	// how it ended. A value it returned is kept in the handle, to be shown
	// only if the result says SUCCESS. A panic becomes FAILED. On
	// runtime.Goexit call does not return, nor on a panic of a Do's
	// function, which goes on up (doCall.call). As the function returns, call
	// claims t (see claim), before it looks at the context to classify an
	// error. So a Cancel, or an ExecuteAll whose ctx ends, after that
	// moment loses: the function's outcome stands. It reports whether it
	// claimed t. If not, Cancel came first.
	call(t *task, ctx context.Context) (status TaskStatus, claimed bool, err error)
	// callHandler runs h for the rejected task, which h may run through
	// Rejection.Run, and then l hears OnStarted. It records in o how it
	// ended, even when h panics or calls runtime.Goexit. It claims t as h
	// ends, as call does, and records in o whether it did.
	callHandler(t *task, ctx context.Context, h RejectionHandler, l TaskLifecycleListener, o *outcome)
	// unwound is the error of a task whose call did not return: runtime.Goexit,
	// or a panic of a Do's function going on up (doCall.call).
	unwound() error
	// tellCompleted tells l the task's result. That is o, which its claimer
	// is about to publish, or the result Cancel publishes when o is the zero
	// outcome. The o argument is a value, because a pointer given to an
	// interface method escapes. That would move every task's outcome to the
	// heap.
	tellCompleted(t *task, o outcome, l TaskLifecycleListener)
	// The methods of a Do's task, called only for an inline task. As
	// methods of body they cost no type assertion.
	inlineCaller
}

// fnBody is the body of a task of a TaskHandle[T], which is the task's
// function. Kept in the task's body, the function costs no word of its own,
// and the body's other word tells the handle's type. handleOf finds the
// handle.
type fnBody[T any] Task[T]

// handleOf returns the TaskHandle[T] that t is part of. Since t has body
// fnBody[T], it was made as a handle's t (see Submit). This is one of the
// package's two unsafe steps (do's task ID is the other). It saves the
// handle a word, because the function is kept rather than a body pointing
// at the handle beside it. That keeps TaskHandle[struct{}] a size class
// smaller (TestHandleLayout).
func handleOf[T any](t *task) *TaskHandle[T] {
	var h *TaskHandle[T]
	return (*TaskHandle[T])(unsafe.Add(unsafe.Pointer(t), -unsafe.Offsetof(h.t)))
}

func (f fnBody[T]) call(t *task, ctx context.Context) (TaskStatus, bool, error) {
	v, perr, err := callTask(Task[T](f), ctx)
	claimed := t.claim()
	status, err := statusOf(ctx, perr, err)
	if status == StatusSuccess {
		handleOf[T](t).value = v
	}
	return status, claimed, err
}

// callTask calls f. It returns what f returned, or the panic it recovered.
// The panic's stack is taken as it unwinds, so it shows where f panicked.
// On runtime.Goexit callTask does not return: the caller's goroutine goes
// on unwinding. A panic(nil) recovers as *runtime.PanicNilError.
func callTask[T any](f Task[T], ctx context.Context) (v T, perr *PanicError, err error) {
	returned := false
	defer func() {
		if !returned {
			if r := recover(); r != nil { // nil: runtime.Goexit
				perr = panicError(r)
			}
		}
	}()
	v, err = f(ctx)
	returned = true
	return v, nil, err
}

// statusOf is how a call that callTask made ended: FAILED on a panic, as
// failedOrCancelled says on an error, else SUCCESS.
func statusOf(ctx context.Context, perr *PanicError, err error) (TaskStatus, error) {
	switch {
	case perr != nil:
		return StatusFailed, perr
	case err != nil:
		return failedOrCancelled(ctx, err), err
	}
	return StatusSuccess, nil
}

func (f fnBody[T]) callHandler(t *task, ctx context.Context, handler RejectionHandler, l TaskLifecycleListener, o *outcome) {
	callHandler(Task[T](f), t, ctx, handler, l, o)
}

// callHandler has handler decide the outcome of t, a task of f turned away,
// and writes it to o. A panic of the handler is FAILED. If t is a Do's and
// the panic is one of f, called through Rejection.Run, that went on up
// through the handler, it goes on up from there once o is written, as
// doCall.call lets it.
func callHandler[T any](f Task[T], t *task, ctx context.Context, handler RejectionHandler, l TaskLifecycleListener, o *outcome) {
	// mu orders every Run against the handler's return. A Run after the
	// return runs nothing, so no OnStarted follows the task's OnCompleted.
	// A Run on another goroutine, racing the return, tells OnStarted under
	// mu.
	var (
		mu     sync.Mutex
		state  runState // guarded by mu
		start  int64    // guarded by mu
		fnOver bool     // guarded by mu: f did not return, by a panic or runtime.Goexit
	)
	r := &Rejection{GroupKey: t.key(), TaskID: t.taskID(), Reason: t.reason()}
	r.run = func(ctx context.Context) (any, error) {
		// Mark the task run and tell OnStarted, under mu. The unlock is
		// deferred: a listener that calls runtime.Goexit leaves mu free.
		err := func() error {
			mu.Lock()
			defer mu.Unlock()
			switch state {
			case runDone:
				return fmt.Errorf("groupconc: Rejection.Run: task %s of group %s already ran", quoted(t.taskID()), quoted(t.key()))
			case runLate:
				return fmt.Errorf("groupconc: Rejection.Run: task %s of group %s: its handler has returned", quoted(t.taskID()), quoted(t.key()))
			}
			state, start = runDone, t.since()
			t.tell(l, notifyStarted)
			return nil
		}()
		if err != nil {
			return nil, err
		}
		ok := false
		defer func() {
			if !ok {
				mu.Lock()
				fnOver = true
				mu.Unlock()
			}
		}()
		fv, ferr := f(ctx)
		ok = true
		return fv, ferr
	}
	var (
		v        any
		err      error
		pv       any // what the handler panicked with
		returned bool
	)
	defer func() {
		// The handler has ended, so its outcome stands against a later
		// Cancel, as a function's does (see body.call).
		o.claimed = t.claim()
		status := StatusSuccess
		switch {
		case !returned:
			pv = recover()
			status, err = StatusFailed, panicError(pv)
		case err == nil && v != nil:
			if tv, ok := v.(T); ok {
				handleOf[T](t).value = tv
			} else {
				// %T of tv would say <nil> for an interface T, such as
				// httplimit's http.Handler, so name T itself.
				status, err = StatusFailed, fmt.Errorf("groupconc: rejection handler returned %T, want %v", v, reflect.TypeFor[T]())
			}
		case err == nil: // SUCCESS with the zero value
		case errors.Is(err, ErrRejected):
			status = StatusRejected
			if !errors.As(err, new(*RejectedError)) {
				err = &RejectedError{GroupKey: t.key(), TaskID: t.taskID(), Reason: t.reason()}
			}
		default:
			status = failedOrCancelled(ctx, err)
		}
		mu.Lock()
		if state == runFresh {
			state = runLate
		}
		o.status, o.err, o.end, o.told = status, err, t.since(), state == runDone
		o.start = o.end
		if o.told {
			o.start = start
		}
		fnPanicked := !returned && fnOver && pv != nil // pv nil: runtime.Goexit
		mu.Unlock()
		if fnPanicked && t.inline() {
			panic(pv)
		}
	}()
	v, err = handler(ctx, r)
	returned = true
}

// runState is what a Rejection's Run may still do.
type runState uint8

const (
	runFresh runState = iota // Run runs the task
	runDone                  // Run ran it: a second call is an error
	runLate                  // the handler returned: Run is an error
)

// A handle's task is never inline: fnBody's inlineCaller methods are never
// called.
func (fnBody[T]) wake(bool, int64)             { panic("groupconc: not a Do") }
func (fnBody[T]) ended()                       { panic("groupconc: not a Do") }
func (fnBody[T]) taskID(*GroupExecutor) string { panic("groupconc: not a Do") }
func (fnBody[T]) borrows() bool                { return false }

func (fnBody[T]) unwound() error { return panicError(nil) }

func (f fnBody[T]) tellCompleted(t *task, o outcome, l TaskLifecycleListener) {
	handleOf[T](t).tellCompletedTo(&o, l)
}

// tellCompletedTo is kept apart, because building the GroupResult[any] takes
// a large frame. That would grow every task goroutine's stack if it were
// reserved when there is no listener.
//
//go:noinline
func (h *TaskHandle[T]) tellCompletedTo(o *outcome, l TaskLifecycleListener) {
	var r GroupResult[T]
	if o.status != 0 {
		r = h.resultOf(o.status, o.start, o.end, o.err)
	} else {
		// Cancel claimed the handle and publishes right after. The result is
		// readable once it has.
		h.t.wait()
		r = h.result()
	}
	notifyCompleted(l, r.GroupKey, r.TaskID, GroupResult[any]{
		GroupKey:  r.GroupKey,
		TaskID:    r.TaskID,
		Status:    r.Status,
		Value:     anyValue(r),
		Err:       r.Err,
		Submitted: r.Submitted,
		Start:     r.Start,
		End:       r.End,
	})
}

// panicError wraps what recover returned. A nil r means the function called
// runtime.Goexit (a panic(nil) recovers as *runtime.PanicNilError).
func panicError(r any) *PanicError {
	if r == nil {
		r = errGoexit
	}
	return &PanicError{Value: r, Stack: debug.Stack()}
}

// failedOrCancelled classifies a function's error. Its context's own error,
// returned while that context is done, means CANCELLED. So does
// DeadlineExceeded once the context's deadline has passed. A context
// derived from the task's with the same deadline has a timer of its own,
// which may fire first: its error then comes back a moment before the
// task's context ends.
func failedOrCancelled(ctx context.Context, err error) TaskStatus {
	deadline := errors.Is(err, context.DeadlineExceeded)
	if !deadline && !errors.Is(err, context.Canceled) {
		return StatusFailed
	}
	if ctx.Err() != nil {
		return StatusCancelled
	}
	if dl, ok := ctx.Deadline(); deadline && ok && !time.Now().Before(dl) {
		return StatusCancelled
	}
	return StatusFailed
}

func anyValue[T any](r GroupResult[T]) any {
	if r.Status != StatusSuccess {
		return nil
	}
	return r.Value
}
