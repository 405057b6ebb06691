package groupconc_test

// FuzzOps' Do calls. A submit op whose behaviour byte has bit 7 set and bit
// 6 clear (fuzzAsDo) calls groupconc.Do instead, on a goroutine of its own
// as fuzzSubmitBlocking calls a blocked SubmitWith, with fn wrapped by the
// oracle (oracleDoTask): the limits are checked while fn runs, as for any
// task. Release and CancelCtx ops pick among tasks and Do calls alike.
// After each step the harness checks the calls that returned
// (fuzzHarvestDos); at the end none may still wait.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// fuzzAsDo reports whether a submit op's behaviour byte v asks for a Do.
// Its bits above the behaviour's three were unused; no input kept in
// testdata has bit 7 set with bit 6 clear there, so they decode as before.
func fuzzAsDo(v byte) bool { return v&0xc0 == 0x80 }

// open opens ft's gate, if it is not open yet.
func (ft *fuzzTask) open() {
	select {
	case <-ft.gate:
	default:
		close(ft.gate)
	}
}

// fuzzPickGated picks a task, a Do call or one of more (the tasks of
// ExecuteAll calls), for an op that opens its gate or cancels its context.
// With no Do calls nor more it picks as pick does.
func fuzzPickGated(in *fuzzBytes, tasks []*fuzzTask, dos []*fuzzDoCall, more ...*fuzzTask) *fuzzTask {
	v, n := int(in.next()), len(tasks)+len(dos)+len(more)
	if n == 0 {
		return nil
	}
	i := v % n
	switch {
	case i < len(tasks):
		return tasks[i]
	case i < len(tasks)+len(dos):
		return dos[i-len(tasks)].ft
	}
	return more[i-len(tasks)-len(dos)]
}

// How a Do call ended.
const (
	fuzzCallReturned = iota
	fuzzCallPanicked
	fuzzCallExited // runtime.Goexit
)

// fuzzDoCall is one Do call.
type fuzzDoCall struct {
	ft      *fuzzTask // its behaviour, gate and context's cancel; no handle
	od      oracleDo
	ctx     context.Context
	calls   atomic.Int32 // times fn was called
	inFn    atomic.Bool  // fn runs
	done    chan struct{}
	checked bool // harvested, or reported hung

	// Written before done closes.
	v     int
	err   error
	how   int
	panic any
}

// fuzzStartDo calls Do on a goroutine of its own and returns the call. The
// goroutine records how Do ended: it returned, a panic came up out of it,
// or runtime.Goexit ended the goroutine (a deferred flag tells, as recover
// gives nil then).
func fuzzStartDo(o *oracle, gaugeKey string, ctx context.Context, e *groupconc.GroupExecutor, key string, fn groupconc.Task[int], opts groupconc.SubmitOptions, ft *fuzzTask) *fuzzDoCall {
	d := &fuzzDoCall{ft: ft, od: oracleDo{groupKey: key}, ctx: ctx, done: make(chan struct{})}
	wrapped := oracleDoTask(o, &d.od, gaugeKey, opts.Cost, func(ctx context.Context) (int, error) {
		d.calls.Add(1)
		d.inFn.Store(true)
		defer d.inFn.Store(false)
		return fn(ctx)
	})
	go func() {
		defer close(d.done)
		returned := false
		defer func() {
			if !returned {
				if d.panic = recover(); d.panic != nil {
					d.how = fuzzCallPanicked
				} else {
					d.how = fuzzCallExited
				}
			}
		}()
		o.doStart(&d.od)
		d.v, d.err = groupconc.Do(ctx, e, key, wrapped, opts)
		returned = true
	}()
	return d
}

// fuzzHarvestDos checks the Do calls that returned since it last looked.
// With over set, Shutdown has returned nil, so every task is over: a call
// still waiting is hung.
func fuzzHarvestDos(t *testing.T, o *oracle, dos []*fuzzDoCall, over bool) {
	t.Helper()
	for i, d := range dos {
		if d.checked {
			continue
		}
		select {
		case <-d.done:
		default:
			if over {
				d.checked = true
				t.Errorf("Do %d of %q (fn %d) still waits after Shutdown returned nil", i, d.od.groupKey, d.ft.do)
			}
			continue
		}
		d.checked = true
		fuzzCheckDo(t, o, i, d)
	}
}

// fuzzDosAfterClose reports the Do calls that still wait once Close has
// returned and the bubble is still but do not run fn: a Do waiting in a
// line or for a queue slot is hung. One whose fn waits for its gate is not.
func fuzzDosAfterClose(t *testing.T, dos []*fuzzDoCall) {
	t.Helper()
	for i, d := range dos {
		if !d.checked && !d.inFn.Load() {
			select {
			case <-d.done:
			default:
				t.Errorf("Do %d of %q (fn %d) still waits after Close returned, and fn does not run", i, d.od.groupKey, d.ft.do)
			}
		}
	}
}

// fuzzCheckDo checks how a Do call ended against what its fn does and
// whether fn ran, and the status of its task as the listener heard it
// against that. It counts that status for the oracle's outcome checks.
func fuzzCheckDo(t *testing.T, o *oracle, i int, d *fuzzDoCall) {
	t.Helper()
	id, bad := o.doID(&d.od)
	name := fmt.Sprintf("Do %d of %q (fn %d, task %q)", i, d.od.groupKey, d.ft.do, id)
	assert.Empty(t, bad, name)
	calls := d.calls.Load()
	ran := calls > 0
	assert.LessOrEqual(t, calls, int32(1), "%s: fn called more than once", name)
	status := groupconc.StatusFailed
	switch d.how {
	case fuzzCallPanicked:
		assert.True(t, ran && d.ft.do == fuzzDoPanic, "%s: a panic came up out of Do: %v", name, d.panic)
		assert.Equal(t, any(fuzzError{}), d.panic, "%s: fn's panic reaches Do's caller as fn raised it", name)
	case fuzzCallExited:
		assert.True(t, ran && d.ft.do == fuzzDoGoexit, "%s: runtime.Goexit ended Do's caller", name)
	default:
		assert.False(t, ran && (d.ft.do == fuzzDoPanic || d.ft.do == fuzzDoGoexit), "%s: Do returned (%d, %v) after fn panicked or called runtime.Goexit", name, d.v, d.err)
		status = fuzzDoResult(t, name, d, id, ran)
	}
	l, _ := o.rec.lookup(d.od.groupKey, id)
	if fuzzTrace {
		t.Logf("%s ended %d: (%d, %v), panic %v, fn ran %v, heard %v", name, d.how, d.v, d.err, d.panic, ran, &l)
	}
	if id == "" {
		assert.False(t, ran, "%s: fn ran, but no task of its was accepted", name)
		return
	}
	if slices.Contains(l.seq(), oracleCompleted) {
		assert.Equal(t, status, l.completed, "%s: the status the listener heard, against what Do returned (%d, %v)", name, d.v, d.err)
	} else {
		assert.Equal(t, oracleLifes[2], l.seq(), "%s: a task that never completed was rejected and never ran", name)
	}
	o.doEnded(status)
}

// fuzzDoResult checks what a Do returned, and returns the status of its
// task that means. Fn ran and returned it; or else Do returns a rejection
// handler's value, a *RejectedError of its task, or the error that says why
// it was cancelled (its ctx's, ErrClosed, ErrGroupShutdown or
// ErrGroupEvicted): a fn that ran ended early by its context may return
// that too. No ctx in the fuzz has a deadline.
func fuzzDoResult(t *testing.T, name string, d *fuzzDoCall, id string, ran bool) groupconc.TaskStatus {
	t.Helper()
	v, err, do := d.v, d.err, d.ft.do
	stopped := errors.Is(err, groupconc.ErrClosed) || errors.Is(err, groupconc.ErrGroupShutdown) || errors.Is(err, groupconc.ErrGroupEvicted)
	cancelled := stopped || errors.Is(err, context.Canceled)
	if err != nil {
		assert.Zero(t, v, "%s: the value returned with %v", name, err)
		assert.NotContains(t, err.Error(), "idle group forgotten", "%s: ended by its group being forgotten", name)
	}
	if do == fuzzDoPreCancelled {
		ok := !ran && (errors.Is(err, context.Canceled) || errors.Is(err, groupconc.ErrClosed))
		assert.True(t, ok, "%s: ctx done before the call, fn ran %v, Do returned %v", name, ran, err)
	}
	var rj *groupconc.RejectedError
	switch {
	case err == nil && ran:
		assert.Equal(t, 1, v, "%s: fn's value", name)
		assert.Contains(t, []int{fuzzDoSucceed, fuzzDoBlock, fuzzDoBlockCtx, fuzzDoSleep}, do, "%s: nil error from this fn", name)
		return groupconc.StatusSuccess
	case err == nil:
		assert.Equal(t, -1, v, "%s: fn never ran, so the value is the rejection handler's", name)
		return groupconc.StatusSuccess
	case errors.Is(err, fuzzError{}):
		assert.True(t, ran && do == fuzzDoFail, "%s: fn's own error %v, fn ran %v", name, err, ran)
		return groupconc.StatusFailed
	case errors.As(err, &rj):
		assert.False(t, ran, "%s: %v after fn ran", name, err)
		assert.ErrorIs(t, err, groupconc.ErrRejected, name)
		assert.Equal(t, d.od.groupKey, rj.GroupKey, "%s: the rejection's group", name)
		assert.Equal(t, id, rj.TaskID, "%s: the rejection's task ID", name)
		reasons := []string{groupconc.ReasonGroupQueueFull, groupconc.ReasonGlobalQueueFull, groupconc.ReasonWaitTimeout, groupconc.ReasonDisplaced}
		assert.Contains(t, reasons, rj.Reason, "%s: the rejection's reason", name)
		return groupconc.StatusRejected
	case cancelled && ran:
		assert.Contains(t, []int{fuzzDoBlockCtx, fuzzDoSleep}, do, "%s: %v from a fn that ignores its context", name, err)
		return groupconc.StatusCancelled
	case cancelled:
		if !stopped {
			assert.Error(t, d.ctx.Err(), "%s: %v, though fn never ran and its ctx is live", name, err)
		}
		return groupconc.StatusCancelled
	}
	t.Errorf("%s: Do returned (%d, %v), not an ending Do documents", name, v, err)
	return 0
}

// fuzzDoSeeds are FuzzOps seeds with Do calls, each in both modes: every
// behaviour of fn, released and cancelled; caller-runs, a handler that runs
// fn and one that gives a value; MaxWait passing and ShutdownGroup for
// callers blocked on a queue of no slots; eviction, an expired Shutdown and
// Close while Do calls wait and run; and costs under parents with a pause.
func fuzzDoSeeds() [][]byte {
	const do, bl = 0x80, 0x40 // as a Do; SubmitWith{Block}
	flat := func(key, fn, sleep, opts byte) []byte { return []byte{fuzzOpSubmit, key, do | fn, sleep, opts} }
	tree := func(key, fn, opts, cost byte) []byte { return []byte{fuzzOpSubmit, key, do | fn, 0, opts, cost} }
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	ops := func(b ...byte) []byte { return b }
	var seeds [][]byte
	for _, seed := range []struct {
		shape byte
		ops   []byte
	}{
		// Concurrency 1 a group: Do calls wait behind a Do and a task;
		// one's ctx is cancelled, then each is released.
		{0, cat(ops(0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
			flat(0, fuzzDoBlock, 0, 0), flat(0, fuzzDoSucceed, 0, 0), flat(0, fuzzDoBlockCtx, 0, 0),
			ops(fuzzOpSubmit, 0, fuzzDoBlock, 0, 0),
			flat(1, fuzzDoPanic, 0, 0), flat(2, fuzzDoGoexit, 0, 0), flat(1, fuzzDoFail, 0, 0), flat(2, fuzzDoSleep, 3, 0),
			ops(fuzzOpCancelCtx, 3, fuzzOpRelease, 1, fuzzOpSleep, 5, fuzzOpReleaseAll, fuzzOpSleep, 1))},
		// Queue threshold 0 and RejectCallerRuns: turned away, fn runs on
		// the caller without permits, a panic of it too.
		{0, cat(ops(0, 0, 0, 0, 1, 2, 0, 0, 0, 0),
			flat(0, fuzzDoBlock, 0, 0), flat(0, fuzzDoBlock, 0, 0), flat(0, fuzzDoSucceed, 0, 0), flat(0, fuzzDoPanic, 0, 0),
			ops(fuzzOpRelease, 1, fuzzOpReleaseAll))},
		// A handler that runs fn: its panic and Goexit go on up.
		{0, cat(ops(0, 0, 0, 0, 1, 4, 0, 0, 0, 0),
			flat(0, fuzzDoBlock, 0, 0), flat(0, fuzzDoPanic, 0, 0), flat(0, fuzzDoFail, 0, 0), flat(0, fuzzDoGoexit, 0, 0),
			flat(0, fuzzDoBlockCtx, 0, 0), ops(fuzzOpCancelCtx, 4, fuzzOpReleaseAll))},
		// A handler's value, and the handler's rejection.
		{0, cat(ops(0, 0, 0, 0, 1, 5, 0, 0, 0, 0), flat(0, fuzzDoBlock, 0, 0), flat(0, fuzzDoSucceed, 0, 0), ops(fuzzOpReleaseAll))},
		{0, cat(ops(0, 0, 0, 0, 1, 3, 0, 0, 0, 0), flat(0, fuzzDoBlock, 0, 0), flat(0, fuzzDoSucceed, 0, 0), ops(fuzzOpReleaseAll))},
		// Blocked on a queue of no slots: MaxWait passes (rejected), the
		// group is shut down, then a blocked caller under RejectCallerRuns
		// runs fn.
		{0, cat(ops(0, 0, 0, 0, 1, 0, 0, 0, 0, 0),
			flat(0, fuzzDoBlock, 0, 0), flat(0, fuzzDoSucceed, 0, bl|8), flat(0, fuzzDoSucceed, 0, bl),
			ops(fuzzOpSleep, 2, fuzzOpShutdownGroup, 0, fuzzOpUpdate, 6, 1+3*2), flat(0, fuzzDoSucceed, 0, bl|8),
			ops(fuzzOpSleep, 3, fuzzOpReleaseAll))},
		// Eviction, a Do whose ctx is done, Shutdown expiring while Do
		// calls wait and run, then Close.
		{0, cat(ops(0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
			flat(0, fuzzDoBlock, 0, 0), flat(0, fuzzDoBlockCtx, 0, 0), flat(1, fuzzDoBlock, 0, 0), flat(1, fuzzDoSucceed, 0, 0),
			ops(fuzzOpEvict, 1), flat(2, fuzzDoPreCancelled, 0, 0), ops(fuzzOpShutdown, 2), flat(2, fuzzDoSucceed, 0, 0),
			ops(fuzzOpRelease, 0, fuzzOpClose, fuzzOpReleaseAll))},
		// Tenant t0 of limit 3: Do calls of costs 2 and 1 fill it, t0's own
		// costly Do waits, a pause of t0 holds a grandchild's back, then
		// the resume.
		{6, cat(ops(0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0),
			tree(0, fuzzDoBlock, 0, 2), tree(0, fuzzDoBlock, 0, 1), tree(4, fuzzDoBlock, 0, 1), tree(1, fuzzDoBlock, 0, 5),
			ops(fuzzOpOverride, 1, 0), tree(3, fuzzDoSucceed, 0, 1), ops(fuzzOpRelease, 0, fuzzOpOverride, 1, 1),
			ops(fuzzOpRelease, 1, fuzzOpReleaseAll, fuzzOpSleep, 3))},
		// RejectCallerRuns under thresholds 0: a paused t1's Do is
		// rejected and never runs; once resumed, one runs on its caller.
		{6, cat(ops(0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0),
			tree(2, fuzzDoBlock, 0, 1), ops(fuzzOpOverride, 2, 0), tree(2, fuzzDoSucceed, 0, 3),
			ops(fuzzOpOverride, 2, 1), tree(2, fuzzDoSucceed, 0, 1), ops(fuzzOpReleaseAll))},
	} {
		for _, mode := range []byte{0, 1} {
			seeds = append(seeds, append([]byte{seed.shape | mode}, seed.ops...))
		}
	}
	return seeds
}
