package groupconc_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// doEnding is one way a Do that waits behind a running task, or runs, ends.
// Each end runs inside the test's synctest bubble (testDoEnding), so a
// time.Sleep in one moves the fake clock.
type doEnding struct {
	name    string
	policy  func(*groupconc.PolicyBuilder) *groupconc.PolicyBuilder
	opts    groupconc.SubmitOptions
	running bool // the Do runs when end is called; else it waits
	end     func(e *groupconc.GroupExecutor, cancel context.CancelFunc)
	wantErr error
	ran     bool
}

var doEndings = []doEnding{
	{name: "ctx ends waiting", end: func(_ *groupconc.GroupExecutor, cancel context.CancelFunc) { cancel() }, wantErr: context.Canceled},
	{name: "ShutdownGroup waiting", end: func(e *groupconc.GroupExecutor, _ context.CancelFunc) { e.ShutdownGroup("a") }, wantErr: groupconc.ErrGroupShutdown},
	{name: "EvictGroup waiting", end: func(e *groupconc.GroupExecutor, _ context.CancelFunc) { e.EvictGroup("a") }, wantErr: groupconc.ErrGroupEvicted},
	{name: "Close waiting", end: func(e *groupconc.GroupExecutor, _ context.CancelFunc) { _ = e.Close() }, wantErr: groupconc.ErrClosed},
	{name: "Shutdown expires waiting", end: expireShutdown, wantErr: groupconc.ErrClosed},
	{name: "ShutdownGroup running", running: true, end: func(e *groupconc.GroupExecutor, _ context.CancelFunc) { e.ShutdownGroup("a") }, wantErr: groupconc.ErrGroupShutdown, ran: true},
	{name: "EvictGroup running", running: true, end: func(e *groupconc.GroupExecutor, _ context.CancelFunc) { e.EvictGroup("a") }, wantErr: groupconc.ErrGroupEvicted, ran: true},
	{name: "Close running", running: true, end: func(e *groupconc.GroupExecutor, _ context.CancelFunc) { _ = e.Close() }, wantErr: groupconc.ErrClosed, ran: true},
	{name: "Shutdown expires running", running: true, end: expireShutdown, wantErr: groupconc.ErrClosed, ran: true},
	{name: "ctx ends running", running: true, end: func(_ *groupconc.GroupExecutor, cancel context.CancelFunc) { cancel() }, wantErr: context.Canceled, ran: true},
	{
		name: "MaxWait passes blocked", opts: groupconc.SubmitOptions{Block: true, MaxWait: time.Second},
		policy:  func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder { return b.DefaultQueueThresholdPerGroup(0) },
		end:     func(*groupconc.GroupExecutor, context.CancelFunc) { time.Sleep(2 * time.Second) }, // fake time, in the bubble
		wantErr: groupconc.ErrRejected,
	},
}

// expireShutdown calls Shutdown with a context that has already ended.
func expireShutdown(e *groupconc.GroupExecutor, _ context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	go func() { _ = e.Shutdown(ctx) }()
}

// TestDoEndsEveryWayATaskEnds drives each ending in both modes: the Do
// returns the error that says why, fn runs only if it was running, and
// every permit is back.
func TestDoEndsEveryWayATaskEnds(t *testing.T) {
	for _, c := range doEndings {
		t.Run(c.name, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
				synctest.Test(t, func(t *testing.T) { testDoEnding(t, mode, c) })
			})
		})
	}
}

func testDoEnding(t *testing.T, mode groupconc.IsolationMode, c doEnding) {
	b := modeBuilder(mode)
	if c.policy != nil {
		b = c.policy(b)
	}
	e := newExecutor(t, b)
	k := newGatedTask(t, 0)
	var h *groupconc.TaskHandle[int]
	if !c.running {
		h = submit(t, t.Context(), e, "a", "ahead", k.Fn)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := make(chan struct{}, 1)
	d := goDo(ctx, e, "a", func(ctx context.Context) (int, error) {
		ran <- struct{}{}
		<-ctx.Done()
		return 0, context.Cause(ctx)
	}, c.opts)
	synctest.Wait()
	require.False(t, d.returned(), "Do returned before its ending")
	c.end(e, cancel)
	<-d.done
	k.Release()
	require.ErrorIs(t, d.err, c.wantErr)
	assert.Equal(t, c.ran, len(ran) == 1, "fn ran")
	if h != nil {
		h.Wait()
	}
	synctest.Wait()
	if !errors.Is(c.wantErr, groupconc.ErrClosed) && !errors.Is(c.wantErr, groupconc.ErrGroupEvicted) {
		require.NoError(t, e.Quiescent())
	}
}

func TestDoReturnsWhatFnReturnsWithAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		boom := errors.New("boom")
		v, err := groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) { return 4, boom }, groupconc.SubmitOptions{})
		assert.Equal(t, 4, v)
		assert.Same(t, boom, err)
		assert.Equal(t, uint64(1), groupStats(t, e, "a").Failed)
	})
}

func TestDoHandledByARejectionHandler(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			runs := true
			e := newExecutor(t, modeBuilder(mode).DefaultQueueThresholdPerGroup(0).
				RejectionHandler(func(ctx context.Context, r *groupconc.Rejection) (any, error) {
					if runs {
						return r.Run(ctx) // fn runs on the Do's caller
					}
					return 11, nil
				}))
			k := newGatedTask(t, 0)
			h := submit(t, t.Context(), e, "a", "ahead", k.Fn)
			synctest.Wait()
			caller := goroutineID()
			v, err := groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) {
				if goroutineID() != caller {
					return 0, errors.New("fn ran on another goroutine")
				}
				return 12, nil
			}, groupconc.SubmitOptions{})
			assert.NoError(t, err)
			assert.Equal(t, 12, v, "Rejection.Run's value")
			runs = false
			v, err = groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) { return 0, nil }, groupconc.SubmitOptions{})
			assert.NoError(t, err)
			assert.Equal(t, 11, v, "the handler's value")
			k.Release()
			quiesce(t, e, h)
		})
	})
}

// A panic of fn run through Rejection.Run goes on up to Do's caller when
// it goes on up through the handler, as if fn had been called directly. A
// handler that recovers it decides, and a handler's own panic is FAILED.
func TestDoPanicThroughRejectionRunGoesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		handler := "run"
		e := newExecutor(t, builder().DefaultQueueThresholdPerGroup(0).
			RejectionHandler(func(ctx context.Context, r *groupconc.Rejection) (v any, err error) {
				switch handler {
				case "recover":
					defer func() { recover(); v = 7 }()
				case "panic":
					panic("handler")
				}
				return r.Run(ctx)
			}))
		k := newGatedTask(t, 0)
		h := submit(t, t.Context(), e, "a", "ahead", k.Fn)
		synctest.Wait()
		boom := func(context.Context) (int, error) { panic("boom") }
		func() {
			defer func() { assert.Equal(t, "boom", recover()) }()
			_, _ = groupconc.Do(t.Context(), e, "a", boom, groupconc.SubmitOptions{})
			t.Error("Do returned after fn panicked")
		}()
		handler = "recover"
		v, err := groupconc.Do(t.Context(), e, "a", boom, groupconc.SubmitOptions{})
		assert.NoError(t, err)
		assert.Equal(t, 7, v, "the handler's value")
		handler = "panic"
		_, err = groupconc.Do(t.Context(), e, "a", boom, groupconc.SubmitOptions{})
		var pe *groupconc.PanicError
		require.ErrorAs(t, err, &pe, "a handler's own panic")
		assert.Equal(t, "handler", pe.Value)
		k.Release()
		quiesce(t, e, h)
		assert.Equal(t, uint64(2), e.Stats().Failed)
	})
}

func TestDoWhoseFnCallsGoexitEndsItsCallerAndGivesThePermitsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) { runtime.Goexit(); return 0, nil }, groupconc.SubmitOptions{})
			t.Error("Do returned after runtime.Goexit")
		}()
		<-done
		synctest.Wait()
		require.NoError(t, e.Quiescent())
		assert.Equal(t, uint64(1), e.Stats().Failed)
	})
}

// A Do whose fn calls runtime.Goexit is reported FAILED with a
// *PanicError, as a task is, though fn returned no error of its own.
func TestDoWhoseFnCallsGoexitIsReportedWithAPanicError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		e := newExecutor(t, builder().TaskLifecycleListener(rec))
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) { runtime.Goexit(); return 0, nil }, groupconc.SubmitOptions{})
		}()
		<-done
		synctest.Wait()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		require.Len(t, rec.results, 1)
		for _, res := range rec.results {
			assert.Equal(t, groupconc.StatusFailed, res.Status)
			var pe *groupconc.PanicError
			assert.ErrorAs(t, res.Err, &pe)
		}
	})
}

func TestDoWaitsInPriorityOrder(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode))
			k := newGatedTask(t, 0)
			h := submit(t, t.Context(), e, "a", "ahead", k.Fn)
			var order []string
			fn := func(name string) groupconc.Task[int] {
				return func(context.Context) (int, error) { order = append(order, name); return 0, nil }
			}
			low := goDo(t.Context(), e, "a", fn("low"), groupconc.SubmitOptions{Priority: groupconc.PriorityLow})
			synctest.Wait()
			high := goDo(t.Context(), e, "a", fn("high"), groupconc.SubmitOptions{Priority: groupconc.PriorityHigh})
			synctest.Wait()
			k.Release()
			<-low.done
			<-high.done
			assert.Equal(t, []string{"high", "low"}, order)
			quiesce(t, e, h)
		})
	})
}

func TestDoOfAPausedGroupUnderCallerRunsIsRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().DefaultQueueThresholdPerGroup(0).RejectionPolicy(groupconc.RejectCallerRuns))
		k := newGatedTask(t, 0)
		h := submit(t, t.Context(), e, "a", "ahead", k.Fn)
		paused := true
		require.NoError(t, e.SetGroupOverride("a", groupconc.GroupOverride{Paused: &paused}))
		ran := false
		_, err := groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) { ran = true; return 0, nil }, groupconc.SubmitOptions{})
		assert.ErrorIs(t, err, groupconc.ErrRejected)
		assert.False(t, ran)
		k.Release()
		h.Wait()
	})
}

// A Do whose ctx ends before fn runs returns ctx.Err() itself, not the
// task's error, which also carries the cause: before it waits, while it
// waits, and at a deadline.
func TestDoWhoseCtxEndsWithACauseReturnsCtxErr(t *testing.T) {
	cause := errors.New("the caller gave up")
	for name, end := range map[string]func(context.Context) (context.Context, func()){
		"before": func(ctx context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(ctx)
			cancel(cause)
			return ctx, func() {}
		},
		"waiting": func(ctx context.Context) (context.Context, func()) {
			ctx, cancel := context.WithCancelCause(ctx)
			return ctx, func() { cancel(cause) }
		},
		"deadline": func(ctx context.Context) (context.Context, func()) {
			ctx, cancel := context.WithTimeoutCause(ctx, time.Second, cause)
			return ctx, func() { time.Sleep(2 * time.Second); cancel() } // fake time: past the deadline
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, builder())
				k := newGatedTask(t, 0)
				h := submit(t, t.Context(), e, "a", "ahead", k.Fn)
				ctx, stop := end(t.Context())
				d := goDo(ctx, e, "a", func(context.Context) (int, error) { return 1, nil }, groupconc.SubmitOptions{})
				synctest.Wait()
				stop()
				<-d.done
				assert.Equal(t, ctx.Err(), d.err)
				assert.Equal(t, uint64(1), groupStats(t, e, "a").Cancelled)
				k.Release()
				quiesce(t, e, h)
			})
		})
	}
}
