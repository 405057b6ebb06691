package groupconc_test

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
