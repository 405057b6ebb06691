package groupconc_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

func TestShutdownWaitsForWaitingAndRunningTasksAndReturnsNil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		gate := make(chan struct{})
		running := submit(t, t.Context(), e, "g", "running", gated(gate, 1))
		waiting := submit(t, t.Context(), e, "g", "waiting", func(context.Context) (int, error) {
			time.Sleep(time.Second) // fake clock: simulated work
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
			time.Sleep(time.Second) // fake clock: simulated work
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

// Shutdown takes a nil ctx as context.Background(): it waits for the
// tasks, and returns nil.
func TestShutdownTakesANilContextAsBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		h := submit(t, t.Context(), e, "a", "slow", func(context.Context) (int, error) {
			time.Sleep(time.Second)
			return 1, nil
		})
		var nilCtx context.Context
		require.NoError(t, e.Shutdown(nilCtx))
		require.True(t, h.IsDone(), "Shutdown returned before the task ended")
		assert.Equal(t, groupconc.StatusSuccess, doneResult(t, h).Status)
	})
}
