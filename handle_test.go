package groupconc_test

// TaskHandle: Cancel, Await, Wait and Done, alone and racing completion.

import (
	"context"
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

func TestCancelCompletesTheHandleAtOnceWhileTheFunctionKeepsItsPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		defer e.Close()
		gate := make(chan struct{})
		var (
			cause      error
			doneClosed bool
		)
		sawCancel := make(chan struct{})
		h1 := submit(t, t.Context(), e, "g", "1", func(ctx context.Context) (int, error) {
			doneClosed = pollDone(ctx)
			cause = context.Cause(ctx)
			close(sawCancel)
			<-gate
			return 1, nil
		})
		var ran2 atomic.Bool
		h2 := submit(t, t.Context(), e, "g", "2", func(context.Context) (int, error) {
			ran2.Store(true)
			return 2, nil
		})
		synctest.Wait()
		require.False(t, h1.IsDone())

		assert.True(t, h1.Cancel(), "Cancel of a running task")
		assert.True(t, h1.IsDone(), "handle complete as soon as Cancel returns")
		r := h1.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.Equal(t, context.Canceled, r.Err)
		assert.False(t, h1.Cancel(), "second Cancel")

		<-sawCancel
		synctest.Wait()
		assert.Equal(t, context.Canceled, cause, "context.Cause seen by the cancelled function")
		assert.True(t, doneClosed, "Done closed once Err reports the cancel")
		gs, ok := e.GroupStats("g")
		require.True(t, ok)
		assert.Equal(t, 1, gs.Running, "the cancelled function still holds its permit")
		assert.False(t, ran2.Load(), "next task started while the cancelled function still runs")

		close(gate)
		r2 := h2.Wait()
		assert.Equal(t, groupconc.StatusSuccess, r2.Status)
		assert.True(t, ran2.Load())
		assert.Equal(t, groupconc.StatusCancelled, h1.Wait().Status, "result never overwritten by the function's return")
		assert.False(t, h2.Cancel(), "Cancel of a completed task")
		assert.Equal(t, groupconc.StatusSuccess, h2.Wait().Status)
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
	})
}

func TestCancelReportsWhetherItCompletedTheHandle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(4)))
		defer e.Close()
		const n = 200
		hs := make([]*groupconc.TaskHandle[int], n)
		won := make([]bool, n)
		for i := range hs {
			hs[i] = submit(t, t.Context(), e, fmt.Sprint("g", i%3), fmt.Sprint(i), func(context.Context) (int, error) {
				return i, nil
			})
			if i%2 == 0 {
				won[i] = hs[i].Cancel() // races the task's own completion
			}
		}
		synctest.Wait()
		var cancelled uint64
		for i, h := range hs {
			if i%2 == 1 {
				won[i] = h.Cancel() // after completion: must lose
				assert.False(t, won[i], "Cancel of completed task %d", i)
			}
			r := h.Wait()
			if won[i] {
				cancelled++
				assert.Equal(t, groupconc.StatusCancelled, r.Status, "task %d whose Cancel returned true", i)
				assert.Equal(t, context.Canceled, r.Err)
			} else {
				assert.Equal(t, groupconc.StatusSuccess, r.Status, "task %d whose Cancel returned false", i)
				assert.Equal(t, i, r.Value)
			}
		}
		s := e.Stats()
		assert.Equal(t, cancelled, s.Cancelled, "Stats.Cancelled")
		assert.Equal(t, uint64(n)-cancelled, s.Succeeded, "Stats.Succeeded")
		assert.NoError(t, e.Quiescent())
	})
}

func TestAwaitWithAnExpiringContextReturnsCancelledAndTheTaskGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		gate := make(chan struct{})
		h := submit(t, t.Context(), e, "g", "t", func(ctx context.Context) (int, error) {
			<-gate
			return 7, ctx.Err()
		})
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		start := time.Now()
		r, err := h.Await(ctx)
		assert.Equal(t, 3*time.Second, time.Since(start), "Await returned after")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.Equal(t, context.DeadlineExceeded, r.Err)
		assert.Equal(t, "g", r.GroupKey)
		assert.Equal(t, "t", r.TaskID)

		synctest.Wait()
		assert.False(t, h.IsDone(), "the task goes on after Await gave up")
		close(gate)
		r, err = h.Await(t.Context())
		assert.NoError(t, err)
		assert.Equal(t, groupconc.StatusSuccess, r.Status, "the task's real result: %v", r.Err)
		assert.Equal(t, 7, r.Value)
	})
}

func TestAwaitReturnsAnErrorOnlyForAnAbortRejection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0)))
		defer e.Close()
		failed := submit(t, t.Context(), e, "f", "t", func(context.Context) (int, error) { return 0, errBoom })
		r, err := failed.Await(t.Context())
		assert.NoError(t, err, "Await error for a FAILED task")
		assert.Equal(t, groupconc.StatusFailed, r.Status)
		assert.Equal(t, errBoom, r.Err)

		gate := make(chan struct{})
		blocker := submit(t, t.Context(), e, "g", "blocker", gated(gate, 0))
		rejected := submit(t, t.Context(), e, "g", "rejected", gated(gate, 1))
		r, err = rejected.Await(t.Context())
		var rej *groupconc.RejectedError
		assert.ErrorAs(t, err, &rej, "Await error under RejectAbort")
		assert.ErrorIs(t, err, groupconc.ErrRejected)
		assert.Equal(t, groupconc.StatusRejected, r.Status)
		assert.ErrorAs(t, r.Err, &rej)
		close(gate)
		r, err = blocker.Await(t.Context())
		assert.NoError(t, err)
		assert.Equal(t, groupconc.StatusSuccess, r.Status)
	})
}

func TestHandleDoneClosesOnCompletionAndEveryWaiterSeesOneResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		gate := make(chan struct{})
		h := submit(t, t.Context(), e, "grp", "id-1", gated(gate, 9))
		assert.Equal(t, "grp", h.GroupKey())
		assert.Equal(t, "id-1", h.TaskID())
		results := make(chan groupconc.GroupResult[int], 6)
		for range 3 {
			go func() { results <- h.Wait() }()
			go func() {
				r, err := h.Await(context.Background())
				assert.NoError(t, err)
				results <- r
			}()
		}
		synctest.Wait()
		select {
		case <-h.Done():
			t.Fatal("Done closed before the task completed")
		default:
		}
		assert.False(t, h.IsDone())
		assert.Empty(t, results, "a waiter returned before completion")

		start := time.Now()
		time.Sleep(time.Second) // fake clock: the task runs for a second
		close(gate)
		<-h.Done()
		assert.True(t, h.IsDone())
		first := h.Wait()
		assert.Equal(t, groupconc.StatusSuccess, first.Status)
		assert.Equal(t, 9, first.Value)
		assert.Equal(t, time.Second, first.QueueWait()+first.Duration(), "queue wait plus run time")
		assert.Equal(t, time.Second, first.End.Sub(start), "End after the gate opened")
		for range 6 {
			assert.Equal(t, first, <-results)
		}
	})
}

// An Await whose context ends returns CANCELLED and ctx.Err() without
// touching the task; all other awaiters see the same real result; one
// completed event.
func TestAwaitTimeoutsDoNotAffectTheTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newEnv(t, builder())
		gate := make(chan struct{})
		h := r.submit("a", func(context.Context) (int, error) { <-gate; return 42, nil })
		type got struct {
			res groupconc.GroupResult[int]
			err error
		}
		results := make(chan got, 10)
		for i := range 10 {
			go func() {
				ctx := r.ctx
				if i < 2 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Second)
					defer cancel()
				}
				res, err := h.Await(ctx)
				results <- got{res, err}
			}()
		}
		time.Sleep(2 * time.Second) // fake clock: the Await deadlines pass
		synctest.Wait()
		require.Len(t, results, 2, "only the short-deadline awaiters returned")
		for range 2 {
			g := <-results
			assert.Equal(t, groupconc.StatusCancelled, g.res.Status)
			assert.ErrorIs(t, g.err, context.DeadlineExceeded)
		}
		assert.False(t, h.IsDone(), "the awaiters' deadlines did not cancel the task")
		close(gate)
		for range 8 {
			g := <-results
			assert.NoError(t, g.err)
			assert.Equal(t, groupconc.StatusSuccess, g.res.Status)
			assert.Equal(t, 42, g.res.Value)
		}
		assert.False(t, h.Cancel(), "Cancel after completion reports false")
		assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, "and does not overwrite the result")
		r.finish()
	})
}

// Two Cancels racing the function's return: at most one Cancel wins;
// the result is CANCELLED exactly when one did; the listener hears one
// completed event carrying the handle's status.
func TestCancelRacingCompletionYieldsOneResult(t *testing.T) {
	for i := range 100 {
		synctest.Test(t, func(t *testing.T) {
			r := newEnv(t, builder())
			gate := make(chan struct{})
			h := r.submit("a", func(context.Context) (int, error) { <-gate; return 1, nil })
			synctest.Wait()
			var wins atomic.Int32
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					if h.Cancel() {
						wins.Add(1)
					}
				})
			}
			if i%2 == 0 {
				runtime.Gosched()
			}
			close(gate)
			wg.Wait()
			res := h.Wait()
			assert.LessOrEqual(t, wins.Load(), int32(1))
			if wins.Load() == 1 {
				assert.Equal(t, groupconc.StatusCancelled, res.Status)
				assert.Equal(t, context.Canceled, res.Err)
			} else {
				assert.Equal(t, groupconc.StatusSuccess, res.Status)
			}
			r.finish()
		})
	}
}

// Await with a nil context waits like Wait and returns the same error
// as a live context would, also for a task that is rejected later, after
// waiting at the global layer (the *RejectedError is published with the
// result, and must be read after it).
func TestAwaitVariantsAgreeOnALateRejection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newEnv(t, builder().GlobalMaxInFlight(2).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0))
		aGate, bGate := make(chan struct{}), make(chan struct{})
		r.submit("a", block(aGate))
		r.submit("b", block(bGate))
		synctest.Wait()
		x := r.submit("a", succeed) // waits at the global layer, is rejected at a's
		var nilCtx context.Context
		type got struct {
			res groupconc.GroupResult[int]
			err error
		}
		viaNil, viaCtx := make(chan got, 1), make(chan got, 1)
		go func() { res, err := x.Await(nilCtx); viaNil <- got{res, err} }()
		go func() { res, err := x.Await(r.ctx); viaCtx <- got{res, err} }()
		synctest.Wait()
		require.False(t, x.IsDone())
		close(bGate)
		a, b := <-viaNil, <-viaCtx
		assert.Equal(t, groupconc.StatusRejected, a.res.Status)
		assert.ErrorIs(t, a.err, groupconc.ErrRejected, "Await(nil) returns the *RejectedError")
		assert.Equal(t, b.err, a.err)
		assert.Equal(t, b.res.Status, a.res.Status)
		close(aGate)
		r.finish()
	})
}
