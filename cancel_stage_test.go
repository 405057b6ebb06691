package groupconc_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A task whose context is done before it holds its permits never runs,
// is CANCELLED, and leaks nothing: already done at Submit, or ended while it
// waited at each layer.
func TestPreCancelledContextNeverRuns(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			r := newEnv(t, builder().Isolation(mode).GlobalMaxInFlight(2).DefaultMaxInFlightPerGroup(2).DefaultMaxConcurrencyPerGroup(1))
			cause := errors.New("caller gave up")
			ctx, cancel := context.WithCancelCause(r.ctx)
			cancel(cause)
			var ran atomic.Bool
			h := r.submitCtx(ctx, "a", func(context.Context) (int, error) { ran.Store(true); return 1, nil })
			require.True(t, h.IsDone(), "a task with a done context completes inside Submit")
			res := h.Wait()
			assert.Equal(t, groupconc.StatusCancelled, res.Status)
			assert.ErrorIs(t, res.Err, context.Canceled)
			assert.ErrorIs(t, res.Err, cause, "the caller's cause is kept")
			synctest.Wait()
			assert.False(t, ran.Load(), "the function must never be called")
			l, _ := r.o.rec.lookup("a", h.TaskID())
			assert.Equal(t, []oracleEventKind{oracleSubmitted, oracleCompleted}, l.seq())
			r.finish()
		})
	})
}

func TestCancelWhileWaitingAtEachLayerNeverRuns(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, layer := range waitLayers {
			t.Run(layer.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					r := newEnv(t, layer.policy(1, -1).Isolation(mode))
					gate := make(chan struct{})
					r.submit(layer.key(0), block(gate))
					synctest.Wait()
					ctx, cancel := context.WithCancel(r.ctx)
					w := r.submitCtx(ctx, layer.key(1), block(gate))
					synctest.Wait()
					s := r.e.Stats()
					require.Equal(t, 1, s.Waiting, "the second task waits at the %s layer", layer.name)
					cancel()
					synctest.Wait()
					assert.Equal(t, groupconc.StatusCancelled, w.Wait().Status)
					assert.False(t, r.started(w))
					assert.Zero(t, r.e.Stats().Waiting, "a cancelled waiter stops waiting")
					close(gate)
					r.finish()
				})
			})
		}
	})
}

// The context ends in the same step as the last permit is handed
// to the waiter. Whichever wins, the function runs only if it was heard
// starting, and the result is CANCELLED or the function's own.
func TestCancelRacingPermitGrantIsConsistent(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for i := range 50 {
			synctest.Test(t, func(t *testing.T) {
				r := newEnv(t, waitLayers[i%3].policy(1, -1).Isolation(mode))
				key := waitLayers[i%3].key
				gate := make(chan struct{})
				r.submit(key(0), block(gate))
				synctest.Wait()
				ctx, cancel := context.WithCancel(r.ctx)
				w := r.submitCtx(ctx, key(1), blockCtx(make(chan struct{})))
				synctest.Wait()
				close(gate)
				if i%2 == 0 {
					runtime.Gosched()
				}
				cancel()
				synctest.Wait()
				assert.Equal(t, groupconc.StatusCancelled, w.Wait().Status)
				r.finish()
			})
		}
	})
}

// A waiter whose caller context is cancelled, where that same cancellation
// makes the running task return and hand its permit to the waiter. The
// waiter's context was done before it held its permits, so it must end
// CANCELLED without running (docs/outcomes.md). The caller's
// cancellation reaches a task's context through context.AfterFunc, i.e. on
// another goroutine, so this needs the permit hand-off to win that race:
// repeated to make that near-certain.
func TestCallerCancelThatFreesThePermitStillCancelsTheWaiter(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		ran := 0
		for range 200 {
			synctest.Test(t, func(t *testing.T) {
				r := newEnv(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1))
				ctx, cancel := context.WithCancel(r.ctx)
				r.submitCtx(ctx, "a", blockCtx(make(chan struct{})))
				w := r.submitCtx(ctx, "a", succeed)
				synctest.Wait()
				cancel()
				synctest.Wait()
				if r.started(w) {
					ran++
				}
				assert.Equal(t, groupconc.StatusCancelled, w.Wait().Status)
				r.finish()
			})
			if t.Failed() {
				break
			}
		}
		assert.Zero(t, ran, "a task whose caller context ended before it held its permits ran")
	})
}

// One task waits at each layer of one group,
// holding the layers before it (global+bulkhead waiting for concurrency;
// global waiting for the bulkhead; nothing, waiting for global). Cancelling
// each gives back exactly what it held: the counts drop by that much and
// the layers it held go to the next in line.
func TestCancelAfterEachAcquisitionStage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newEnv(t, builder().GlobalMaxInFlight(3).DefaultMaxInFlightPerGroup(2).DefaultMaxConcurrencyPerGroup(1))
		gate := make(chan struct{})
		run := r.submit("a", block(gate))
		synctest.Wait()
		atConc := r.submit("a", block(gate)) // holds global + bulkhead
		synctest.Wait()
		atBulk := r.submit("a", block(gate)) // holds global
		synctest.Wait()
		atGlobal := r.submit("a", block(gate)) // holds nothing
		synctest.Wait()
		require.True(t, r.started(run))
		gs, _ := r.e.GroupStats("a")
		require.Equal(t, 3, r.e.Stats().GlobalInFlight)
		require.Equal(t, 2, gs.InFlight)
		require.Equal(t, 3, gs.Waiting)

		atConc.Cancel() // gives back bulkhead and global: atBulk takes the bulkhead, atGlobal the global
		synctest.Wait()
		gs, _ = r.e.GroupStats("a")
		assert.Equal(t, 3, r.e.Stats().GlobalInFlight)
		assert.Equal(t, 2, gs.InFlight)
		assert.Equal(t, 2, gs.Waiting)

		atBulk.Cancel() // gives back bulkhead and global: atGlobal takes the bulkhead
		synctest.Wait()
		gs, _ = r.e.GroupStats("a")
		assert.Equal(t, 2, r.e.Stats().GlobalInFlight)
		assert.Equal(t, 2, gs.InFlight)
		assert.Equal(t, 1, gs.Waiting)

		atGlobal.Cancel()
		synctest.Wait()
		gs, _ = r.e.GroupStats("a")
		assert.Equal(t, 1, r.e.Stats().GlobalInFlight)
		assert.Equal(t, 1, gs.InFlight)
		assert.Zero(t, gs.Waiting)
		for _, h := range []*groupconc.TaskHandle[int]{atConc, atBulk, atGlobal} {
			assert.False(t, r.started(h))
		}
		close(gate)
		r.finish()
	})
}

// A task holding the global permit while it waits for its group's must
// give the global permit back when it is cancelled there.
func TestCancelledGroupWaiterReturnsItsGlobalPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newEnv(t, builder().GlobalMaxInFlight(2).DefaultMaxConcurrencyPerGroup(1))
		gate := make(chan struct{})
		a1 := r.submit("a", block(gate))
		a2 := r.submit("a", block(gate)) // holds a global permit, waits on a's concurrency
		synctest.Wait()
		require.True(t, r.started(a1))
		require.False(t, r.started(a2))
		require.Equal(t, 2, r.e.Stats().GlobalInFlight)
		b1 := r.submit("b", block(gate)) // waits for a global permit
		synctest.Wait()
		require.False(t, r.started(b1), "the global cap is full")

		require.True(t, a2.Cancel())
		synctest.Wait()
		assert.True(t, r.started(b1), "a2's global permit must go to b1")
		assert.Equal(t, 2, r.e.Stats().GlobalInFlight)
		close(gate)
		synctest.Wait()
		require.NoError(t, r.e.Quiescent())

		// Full capacity is back: exactly the cap starts.
		gate2 := make(chan struct{})
		hs := []*groupconc.TaskHandle[int]{r.submit("c", block(gate2)), r.submit("d", block(gate2)), r.submit("e", block(gate2))}
		synctest.Wait()
		assert.Equal(t, 2, r.countStarted(hs...))
		close(gate2)
		r.finish()
		assert.EqualValues(t, 2, r.o.globalMax())
	})
}

// Every cancellation route keeps its cause, for a task cancelled while
// waiting (its result's Err) and for a running one (context.Cause of its
// context). ShutdownGroup and EvictGroup causes are unexported errors in
// this design, so they are matched by message.
func TestCancellationKeepsItsCause(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		callerCause := errors.New("caller's own cause")
		routes := []struct {
			name string
			// cancel cancels the tasks of group "a" submitted with ctx/cancel.
			cancel func(r *env, cancel context.CancelCauseFunc, hs []*groupconc.TaskHandle[int])
			match  func(t *testing.T, err error)
		}{
			{"Close", func(r *env, _ context.CancelCauseFunc, _ []*groupconc.TaskHandle[int]) { r.e.Close() },
				func(t *testing.T, err error) { assert.ErrorIs(t, err, groupconc.ErrClosed) }},
			{"ShutdownExpired", func(r *env, _ context.CancelCauseFunc, _ []*groupconc.TaskHandle[int]) {
				ctx, cancel := context.WithTimeout(r.ctx, time.Second)
				defer cancel()
				assert.ErrorIs(t, r.e.Shutdown(ctx), context.DeadlineExceeded)
			}, func(t *testing.T, err error) { assert.ErrorIs(t, err, groupconc.ErrClosed) }},
			{"ShutdownGroup", func(r *env, _ context.CancelCauseFunc, _ []*groupconc.TaskHandle[int]) { r.e.ShutdownGroup("a") },
				func(t *testing.T, err error) { assert.ErrorIs(t, err, groupconc.ErrGroupShutdown) }},
			{"EvictGroup", func(r *env, _ context.CancelCauseFunc, _ []*groupconc.TaskHandle[int]) { r.e.EvictGroup("a") },
				func(t *testing.T, err error) { assert.ErrorIs(t, err, groupconc.ErrGroupEvicted) }},
			{"CallerCause", func(_ *env, cancel context.CancelCauseFunc, _ []*groupconc.TaskHandle[int]) { cancel(callerCause) },
				func(t *testing.T, err error) { assert.ErrorIs(t, err, callerCause) }},
		}
		for _, route := range routes {
			t.Run(route.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					r := newEnv(t, builder().Isolation(mode))
					ctx, cancel := context.WithCancelCause(r.ctx)
					defer cancel(nil)
					seen := make(chan error, 1)
					release := make(chan struct{})
					running := r.submitCtx(ctx, "a", func(ctx context.Context) (int, error) {
						<-ctx.Done()
						seen <- context.Cause(ctx)
						<-release // keep the permit until the waiter has seen its cancellation
						return 0, ctx.Err()
					})
					waiting := r.submitCtx(ctx, "a", succeed)
					synctest.Wait()
					require.True(t, r.started(running))
					route.cancel(r, cancel, []*groupconc.TaskHandle[int]{running, waiting})
					synctest.Wait()
					close(release)
					synctest.Wait()
					res := waiting.Wait()
					assert.Equal(t, groupconc.StatusCancelled, res.Status)
					assert.ErrorIs(t, res.Err, context.Canceled)
					route.match(t, res.Err)
					route.match(t, <-seen)
					assert.Equal(t, groupconc.StatusCancelled, running.Wait().Status)
					r.finish()
				})
			})
		}
	})
}

// A caller's deadline shows as DeadlineExceeded, inside the function
// (ctx.Err) and on a task that was still waiting; Cancel shows as Canceled.
func TestDeadlineAndCancelAreTold(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			r := newEnv(t, builder().Isolation(mode))
			ctx, cancel := context.WithTimeout(r.ctx, time.Second)
			defer cancel()
			inside := make(chan error, 1)
			release := make(chan struct{})
			running := r.submitCtx(ctx, "a", func(ctx context.Context) (int, error) {
				<-ctx.Done()
				inside <- ctx.Err()
				<-release // hold the permit until the waiter has seen its deadline
				return 0, ctx.Err()
			})
			waiting := r.submitCtx(ctx, "a", succeed)
			time.Sleep(2 * time.Second) // fake clock: the deadline passes
			synctest.Wait()
			close(release)
			assert.ErrorIs(t, <-inside, context.DeadlineExceeded, "the function sees the caller's deadline")
			assert.ErrorIs(t, waiting.Wait().Err, context.DeadlineExceeded)
			assert.Equal(t, groupconc.StatusCancelled, running.Wait().Status)

			causes := make(chan error, 1)
			h := r.submit("b", func(ctx context.Context) (int, error) {
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return 0, ctx.Err()
			})
			synctest.Wait()
			require.True(t, h.Cancel())
			assert.Equal(t, context.Canceled, h.Wait().Err)
			assert.ErrorIs(t, <-causes, context.Canceled)
			r.finish()
		})
	})
}

// A task ExecuteAll cancels as its context ends, and that looks at its
// own context only later, sees the cause ExecuteAll gave: the context's
// error and its cause.
func TestATaskSeesTheCauseExecuteAllCancelledItWith(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		late := errors.New("too late")
		ctx, cancel := context.WithTimeoutCause(t.Context(), time.Second, late)
		defer cancel()
		seen := make(chan error, 1)
		_, err := groupconc.ExecuteAll(ctx, e, []groupconc.GroupTask[int]{{GroupKey: "a", TaskID: "slow",
			Task: func(ctx context.Context) (int, error) {
				time.Sleep(2 * time.Second) // fake clock: past ExecuteAll's cancel
				seen <- context.Cause(ctx)
				return 0, nil
			}}})
		require.ErrorIs(t, err, context.DeadlineExceeded) // at once, as the task runs on
		cause := <-seen
		assert.ErrorIs(t, cause, context.DeadlineExceeded)
		assert.ErrorIs(t, cause, late)
	})
}
