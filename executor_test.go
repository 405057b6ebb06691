package groupconc_test

// The executor's own calls: Submit, Shutdown and Close, and how they race.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSubmitRejectsAnInvalidTaskNamingTheField(t *testing.T) {
	ok := func(context.Context) (int, error) { return 1, nil }
	cases := []struct {
		name, key, id string
		task          groupconc.Task[int]
		field         string
	}{
		{"empty group key", "", "t", ok, "GroupKey"},
		{"empty task ID", "g", "", ok, "TaskID"},
		{"nil task", "g", "t", nil, "Task"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := groupconc.New(nil)
			defer e.Close()
			h, err := groupconc.Submit(t.Context(), e, c.key, c.id, c.task)
			assert.Nil(t, h)
			require.ErrorIs(t, err, groupconc.ErrInvalidTask)
			assert.Regexp(t, `\b`+c.field+`\b`, err.Error(), "error should name the field")
			assert.Zero(t, e.Stats().Submitted, "Stats.Submitted")
		})
	}
}

func TestSubmitAfterShutdownOrCloseReturnsErrClosed(t *testing.T) {
	stops := map[string]func(e *groupconc.GroupExecutor) error{
		"Shutdown": func(e *groupconc.GroupExecutor) error { return e.Shutdown(context.Background()) },
		"Close":    func(e *groupconc.GroupExecutor) error { return e.Close() },
	}
	for name, stop := range stops {
		t.Run(name, func(t *testing.T) {
			e := groupconc.New(nil)
			require.NoError(t, stop(e))
			var ran atomic.Bool
			h, err := groupconc.Submit(t.Context(), e, "g", "t", neverRuns(&ran))
			assert.Nil(t, h)
			assert.ErrorIs(t, err, groupconc.ErrClosed)
			assert.False(t, ran.Load(), "task ran after %s", name)
			assert.Zero(t, e.Stats().Submitted, "Stats.Submitted")
		})
	}
}

func TestSubmitNeverBlocksOnPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().GlobalMaxInFlight(1)))
		defer e.Close()
		gate := make(chan struct{})
		hs := make([]*groupconc.TaskHandle[int], 100)
		// If Submit waited for a permit, the bubble would deadlock here.
		for i := range hs {
			hs[i] = submit(t, t.Context(), e, "g", fmt.Sprint(i), gated(gate, i))
		}
		synctest.Wait()
		gs, ok := e.GroupStats("g")
		require.True(t, ok)
		assert.Equal(t, 1, gs.Running)
		assert.Equal(t, 99, gs.Waiting)
		close(gate)
		for i, h := range hs {
			r := h.Wait()
			assert.Equal(t, groupconc.StatusSuccess, r.Status)
			assert.Equal(t, i, r.Value)
		}
	})
}

func TestSubmitTaskContextCarriesCallerValuesDeadlineAndCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		deadline := time.Now().Add(time.Hour)
		ctx, cancel := context.WithDeadline(context.WithValue(t.Context(), ctxKey{}, "tenant-7"), deadline)
		defer cancel()
		var (
			value       any
			gotDeadline time.Time
			hasDeadline bool
			sawCancel   atomic.Bool
		)
		h := submit(t, ctx, e, "g", "t", func(ctx context.Context) (int, error) {
			value = ctx.Value(ctxKey{})
			gotDeadline, hasDeadline = ctx.Deadline()
			<-ctx.Done()
			sawCancel.Store(true)
			return 0, ctx.Err()
		})
		synctest.Wait()
		assert.False(t, sawCancel.Load(), "task context done before the caller's was cancelled")
		cancel()
		r := h.Wait()
		assert.True(t, sawCancel.Load(), "cancelling the caller's context should cancel the task")
		assert.Equal(t, "tenant-7", value, "value from the caller's context")
		assert.True(t, hasDeadline, "task context should carry the caller's deadline")
		assert.True(t, gotDeadline.Equal(deadline), "deadline %v, want %v", gotDeadline, deadline)
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.ErrorIs(t, r.Err, context.Canceled)
	})
}

// A context derived from one with a deadline reports DeadlineExceeded once
// that deadline passes (the context.Context contract); so must the task's.
func TestSubmitTaskContextEndsWithDeadlineExceededWhenTheCallerDeadlinePasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		var taskErr error
		h := submit(t, ctx, e, "g", "t", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			taskErr = ctx.Err()
			return 0, ctx.Err()
		})
		r := h.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.ErrorIs(t, taskErr, context.DeadlineExceeded, "task ctx.Err() after the caller's deadline")
		assert.ErrorIs(t, r.Err, context.DeadlineExceeded, "result Err after the caller's deadline")
	})
}

func TestSubmitWithADoneContextCompletesCancelledWithoutRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(allLayersPolicy(t))
		defer e.Close()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		var ran atomic.Bool
		h := submit(t, ctx, e, "g", "t", neverRuns(&ran))
		r := h.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.ErrorIs(t, r.Err, context.Canceled)
		synctest.Wait()
		assert.False(t, ran.Load(), "task ran with a done context")
		assert.NoError(t, e.Quiescent())
		fullBatch(t, e, "g")
	})
}

func TestShutdownWaitsForWaitingAndRunningTasksAndReturnsNil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		gate := make(chan struct{})
		running := submit(t, t.Context(), e, "g", "running", gated(gate, 1))
		waiting := submit(t, t.Context(), e, "g", "waiting", func(context.Context) (int, error) {
			time.Sleep(time.Second)
			return 2, nil
		})
		synctest.Wait()

		var shutdownErr error
		var doneAtReturn [2]bool
		returned := make(chan struct{})
		go func() {
			shutdownErr = e.Shutdown(t.Context())
			doneAtReturn = [2]bool{running.IsDone(), waiting.IsDone()}
			close(returned)
		}()
		synctest.Wait()
		select {
		case <-returned:
			t.Fatal("Shutdown returned while tasks were still running")
		default:
		}
		_, err := groupconc.Submit(t.Context(), e, "g", "late", gated(nil, 0))
		assert.ErrorIs(t, err, groupconc.ErrClosed, "Submit during Shutdown")

		start := time.Now()
		close(gate)
		<-returned
		assert.Equal(t, time.Second, time.Since(start), "Shutdown returned after")
		assert.NoError(t, shutdownErr)
		assert.Equal(t, [2]bool{true, true}, doneAtReturn, "tasks complete when Shutdown returned")
		assert.Equal(t, groupconc.StatusSuccess, running.Wait().Status)
		r := waiting.Wait()
		assert.Equal(t, groupconc.StatusSuccess, r.Status, "waiting task should run to completion: %v", r.Err)
		assert.Equal(t, 2, r.Value)
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
	})
}

func TestShutdownWithAnExpiringContextReturnsAtTheDeadlineAndCancelsTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		quick := submit(t, t.Context(), e, "a", "quick", func(context.Context) (int, error) {
			time.Sleep(time.Second)
			return 1, nil
		})
		var cause error
		slow := submit(t, t.Context(), e, "b", "slow", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return 0, ctx.Err()
		})
		var queuedRan atomic.Bool
		queued := submit(t, t.Context(), e, "b", "queued", neverRuns(&queuedRan))

		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		err := e.Shutdown(ctx)
		assert.Equal(t, 5*time.Second, time.Since(start), "Shutdown returned after")
		assert.ErrorIs(t, err, context.DeadlineExceeded)

		assert.Equal(t, groupconc.StatusSuccess, quick.Wait().Status, "task finished before the deadline")
		assert.Equal(t, groupconc.StatusCancelled, slow.Wait().Status, "running task at the deadline")
		r := queued.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status, "waiting task at the deadline")
		synctest.Wait()
		assert.Equal(t, groupconc.ErrClosed, cause, "context.Cause of a task cancelled by Shutdown")
		assert.False(t, queuedRan.Load(), "waiting task ran after Shutdown's deadline")
		assert.NoError(t, e.Quiescent())
	})
}

func TestCloseCancelsEverythingAndReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		gate := make(chan struct{})
		var cause error
		sawCancel := make(chan struct{})
		running := submit(t, t.Context(), e, "g", "running", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			cause = context.Cause(ctx)
			close(sawCancel)
			<-gate // keeps running after Close returns
			return 1, nil
		})
		var queuedRan atomic.Bool
		queued := submit(t, t.Context(), e, "g", "queued", neverRuns(&queuedRan))
		// A function that polls Err instead of selecting on Done.
		var pollCause error
		poller := submit(t, t.Context(), e, "p", "poller", func(ctx context.Context) (int, error) {
			if !pollDone(ctx) {
				return 0, errors.New("Err set but Done still open")
			}
			pollCause = context.Cause(ctx)
			return 0, ctx.Err()
		})
		synctest.Wait()

		start := time.Now()
		assert.NoError(t, e.Close()) // would deadlock the bubble if it waited
		assert.Zero(t, time.Since(start))
		<-sawCancel
		assert.Equal(t, groupconc.ErrClosed, cause, "context.Cause of a task after Close")
		synctest.Wait()
		r := queued.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status, "waiting task after Close")
		assert.ErrorIs(t, r.Err, context.Canceled)
		assert.False(t, queuedRan.Load(), "waiting task ran after Close")
		assert.False(t, running.IsDone(), "running task completed before its function returned")
		r = poller.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status, "polling task after Close")
		assert.ErrorIs(t, r.Err, context.Canceled)
		assert.Equal(t, groupconc.ErrClosed, pollCause, "context.Cause seen by a polling task after Close")

		close(gate)
		assert.Equal(t, groupconc.StatusSuccess, running.Wait().Status)
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
		_, err := groupconc.Submit(t.Context(), e, "g", "late", gated(nil, 0))
		assert.ErrorIs(t, err, groupconc.ErrClosed)
	})
}

func TestCloseIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		h := submit(t, t.Context(), e, "g", "t", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		})
		synctest.Wait()
		for i := range 3 {
			assert.NoError(t, e.Close(), "Close call %d", i+1)
		}
		assert.Equal(t, groupconc.StatusCancelled, h.Wait().Status)
		synctest.Wait()
		assert.NoError(t, e.Close(), "Close after every task ended")
		assert.Equal(t, uint64(1), e.Stats().Cancelled, "Stats.Cancelled")

		e2 := groupconc.New(nil)
		require.NoError(t, e2.Shutdown(t.Context()))
		assert.NoError(t, e2.Close(), "Close after Shutdown")
		assert.NoError(t, e2.Close(), "second Close after Shutdown")
	})
}

// A caller-runs task accepted before Shutdown is drained like any
// other; once Shutdown has begun nothing runs inline: Submit returns
// ErrClosed.
func TestCallerRunsAfterShutdownBeganIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newEnv(t, builder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).RejectionPolicy(groupconc.RejectCallerRuns))
		gate, crGate := make(chan struct{}), make(chan struct{})
		r.submit("a", block(gate))
		cr := r.submit("a", block(crGate)) // rejected: runs without permits
		synctest.Wait()
		require.True(t, r.started(cr))

		var shutdownErr error
		shutdownDone := make(chan struct{})
		go func() {
			defer close(shutdownDone)
			shutdownErr = r.e.Shutdown(context.Background())
		}()
		synctest.Wait()
		var ran atomic.Bool
		_, err := oracleSubmit(r.o, r.ctx, r.e, "a", "late", func(context.Context) (int, error) { ran.Store(true); return 0, nil })
		assert.ErrorIs(t, err, groupconc.ErrClosed)
		close(gate)
		synctest.Wait()
		select {
		case <-shutdownDone:
			t.Fatal("Shutdown returned while a caller-runs task was still running")
		default:
		}
		close(crGate)
		<-shutdownDone
		require.NoError(t, shutdownErr)
		r.o.seal()
		synctest.Wait()
		assert.False(t, ran.Load(), "nothing runs inline after Shutdown began")
		assert.Equal(t, groupconc.StatusSuccess, cr.Wait().Status)
		r.o.checkAll(t, r.e, oracleLimitsOf(r.p))
	})
}

// Submit racing Shutdown. The gate is one atomic word (CAS on enter),
// so there is no window between the closed check and the count to park a
// hook in; instead many real-time rounds race submitters against Shutdown
// and check the contract on every Submit: it returns ErrClosed, or its task
// is drained (handle complete, no event) by the time Shutdown returns; no
// function runs after Shutdown returned; nothing panics.
func TestSubmitRacingShutdownIsRefusedOrDrained(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		submitRacingShutdownRound(t, round, false)
	}
}

// Submit never panics, every accepted task still completes
// (Close cancels; Shutdown afterwards joins), and a Submit that starts after
// Close returned gets ErrClosed.
func TestSubmitRacingCloseNeverPanics(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		submitRacingShutdownRound(t, round, true)
	}
}

func submitRacingShutdownRound(t *testing.T, round int, useClose bool) {
	t.Helper()
	o := newOracle()
	p, err := builder().GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(2).
		DefaultQueueThresholdPerGroup(8).RejectionPolicy(groupconc.RejectionPolicy(round % 3)).
		TaskLifecycleListener(o.rec).Build()
	require.NoError(t, err)
	e := groupconc.New(p)
	var stopped atomic.Bool // Shutdown/Close has returned
	var lateRun atomic.Int32
	const submitters = 4
	start := make(chan struct{})
	enough := make(chan struct{}, submitters)
	var wg sync.WaitGroup
	for s := range submitters {
		wg.Go(func() {
			<-start
			for i := range 48 {
				before := stopped.Load()
				var h *groupconc.TaskHandle[int]
				var err error
				o.guard(t, "Submit", func() {
					h, err = oracleSubmit(o, context.Background(), e, fmt.Sprintf("g%d", i%3), fmt.Sprintf("s%d-%d", s, i), func(ctx context.Context) (int, error) {
						if !useClose && stopped.Load() {
							lateRun.Add(1)
						}
						runtime.Gosched()
						return i, nil
					})
				})
				if err != nil {
					assert.ErrorIs(t, err, groupconc.ErrClosed)
					return
				}
				if before {
					t.Errorf("round %d: Submit accepted a task after %s returned", round, map[bool]string{false: "Shutdown", true: "Close"}[useClose])
					return
				}
				if !useClose && stopped.Load() && !h.IsDone() {
					t.Errorf("round %d: an accepted task is not complete after Shutdown returned", round)
				}
				if i == 8 {
					enough <- struct{}{}
				}
			}
		})
	}
	close(start)
	<-enough // the first submitter is well under way; the others race the stop
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if useClose {
		o.guard(t, "Close", func() { require.NoError(t, e.Close()) })
		stopped.Store(true)
		o.guard(t, "Shutdown", func() { require.NoError(t, e.Shutdown(ctx), "join after Close") })
	} else {
		o.guard(t, "Shutdown", func() { require.NoError(t, e.Shutdown(ctx)) })
		stopped.Store(true)
		o.seal()
	}
	wg.Wait()
	assert.Zero(t, lateRun.Load(), "round %d: a function ran after Shutdown returned", round)
	o.awaitAll(t, ctx)
	o.checkAll(t, e, oracleLimitsOf(p))
}

// Close returns while tasks are still waiting or running; once their
// functions return (here: as soon as they see their context cancelled), no
// goroutine of the executor is left: the bubble must be empty when
// synctest.Test returns, without any join.
func TestCloseLeavesNoGoroutineBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newEnv(t, builder().DefaultMaxConcurrencyPerGroup(3).GlobalMaxInFlight(10))
		var hs []*groupconc.TaskHandle[int]
		for i := range 100 {
			hs = append(hs, r.submit(fmt.Sprintf("g%d", i%7), func(ctx context.Context) (int, error) {
				select {
				case <-time.After(time.Duration(1+i%5) * time.Millisecond):
					return i, nil
				case <-ctx.Done():
					return 0, ctx.Err()
				}
			}))
		}
		time.Sleep(2 * time.Millisecond) // fake clock: some tasks end, some run on
		require.NoError(t, r.e.Close())
		synctest.Wait()
		for _, h := range hs {
			require.True(t, h.IsDone())
		}
		r.o.checkAll(t, r.e, oracleLimitsOf(r.p))
		// No Shutdown, no Wait: the end of the bubble is the leak check (I5).
	})
}

// Close wakes every task blocked at any layer: every handle ends
// CANCELLED (or FAILED), no permit is left held, and Submit afterwards
// returns ErrClosed.
func TestCloseWakesEveryBlockedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newEnv(t, builder().GlobalMaxInFlight(2).DefaultMaxConcurrencyPerGroup(1).DefaultMaxInFlightPerGroup(2))
		gate := make(chan struct{})
		var hs []*groupconc.TaskHandle[int]
		for i := range 20 {
			hs = append(hs, r.submit(fmt.Sprintf("g%d", i%4), blockCtx(gate)))
		}
		synctest.Wait()
		require.Equal(t, 2, r.countStarted(hs...))
		require.NoError(t, r.e.Close())
		synctest.Wait()
		for _, h := range hs {
			res := h.Wait()
			assert.Contains(t, []groupconc.TaskStatus{groupconc.StatusCancelled, groupconc.StatusFailed}, res.Status)
			if !r.started(h) { // a running one returned its own ctx.Err(), unwrapped
				assert.ErrorIs(t, res.Err, groupconc.ErrClosed, "the cause is kept")
			}
		}
		_, err := oracleSubmit(r.o, r.ctx, r.e, "g0", "after", succeed)
		assert.ErrorIs(t, err, groupconc.ErrClosed)
		r.o.checkAll(t, r.e, oracleLimitsOf(r.p))
		close(gate)
	})
}

// Shutdown returns DeadlineExceeded exactly at its deadline while a
// task (ignoring its context) still runs, and cancels what remains; a
// concurrent Shutdown without deadline returns nil exactly when the task
// ends; Close afterwards returns; Submit during the drain is refused.
func TestShutdownHonoursItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newEnv(t, builder())
		var sawCause error
		h := r.submit("a", func(ctx context.Context) (int, error) {
			time.Sleep(10 * time.Second) // simulated work that ignores ctx
			sawCause = context.Cause(ctx)
			return 1, nil
		})
		w := r.submit("a", succeed) // waits for a's single permit
		start := time.Now()
		var bgErr error
		var bgAt time.Duration
		bgDone := make(chan struct{})
		go func() {
			defer close(bgDone)
			bgErr = r.e.Shutdown(context.Background())
			bgAt = time.Since(start)
		}()
		ctx, cancel := context.WithTimeout(r.ctx, time.Second)
		defer cancel()
		err := r.e.Shutdown(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(start), "Shutdown returns exactly at its deadline")
		assert.False(t, h.IsDone(), "the running task goes on")
		synctest.Wait()
		res := w.Wait()
		assert.Equal(t, groupconc.StatusCancelled, res.Status, "the expired Shutdown cancels the waiting task")
		assert.ErrorIs(t, res.Err, groupconc.ErrClosed)
		_, err = oracleSubmit(r.o, r.ctx, r.e, "b", "during", succeed)
		assert.ErrorIs(t, err, groupconc.ErrClosed, "Submit during the drain is refused")

		<-bgDone
		assert.NoError(t, bgErr)
		assert.Equal(t, 10*time.Second, bgAt, "a Shutdown without deadline returns when the last task ends")
		assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, "a task that ignores its context finishes normally")
		assert.ErrorIs(t, sawCause, groupconc.ErrClosed, "its context was cancelled with ErrClosed")
		assert.NoError(t, r.e.Close())
		r.finish()
	})
}

func TestConcurrentShutdownsAllReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newEnv(t, builder().DefaultMaxConcurrencyPerGroup(2))
		gate := make(chan struct{})
		for i := range 6 {
			r.submit(fmt.Sprintf("g%d", i%2), block(gate))
		}
		errs := make(chan error, 5)
		for range 5 {
			go func() { errs <- r.e.Shutdown(context.Background()) }()
		}
		synctest.Wait()
		assert.Empty(t, errs, "no Shutdown returns while tasks run")
		close(gate)
		for range 5 {
			assert.NoError(t, <-errs)
		}
		assert.NoError(t, r.e.Close())
		r.finish()
	})
}

// On an executor with nothing left to drain, Shutdown returns nil even
// if its context is already done: the drain is complete, so "ctx ends
// first" is false (net/http's Server.Shutdown checks for idleness first, too).
func TestShutdownOfDrainedExecutorReturnsNilEvenWithDoneContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for i := range 64 {
			r := newEnv(t, builder())
			r.submit("a", succeed).Wait()
			synctest.Wait()
			ctx, cancel := context.WithCancel(r.ctx)
			cancel()
			if err := r.e.Shutdown(ctx); err != nil {
				t.Errorf("attempt %d: Shutdown of a drained executor returned %v, want nil", i, err)
				return
			}
		}
	})
}
