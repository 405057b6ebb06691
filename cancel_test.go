package groupconc_test

// Cancellation by every route, at every layer and at every stage: a
// cancelled task never runs, gives back exactly what it held, and keeps its
// cause.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWaitingTaskCancelledByAnyRouteEndsCancelledAndLeavesEveryPermit(t *testing.T) {
	type route func(t *testing.T, e *groupconc.GroupExecutor, waiting []*groupconc.TaskHandle[int], cancels []context.CancelFunc)
	routes := []struct {
		name   string
		cancel route
		closes bool
	}{
		{"handle Cancel", func(t *testing.T, _ *groupconc.GroupExecutor, waiting []*groupconc.TaskHandle[int], _ []context.CancelFunc) {
			for _, h := range waiting {
				assert.True(t, h.Cancel(), "Cancel of a waiting task")
			}
		}, false},
		{"caller context", func(_ *testing.T, _ *groupconc.GroupExecutor, _ []*groupconc.TaskHandle[int], cancels []context.CancelFunc) {
			for _, c := range cancels {
				c()
			}
		}, false},
		{"ShutdownGroup", func(_ *testing.T, e *groupconc.GroupExecutor, _ []*groupconc.TaskHandle[int], _ []context.CancelFunc) {
			e.ShutdownGroup("g")
		}, false},
		{"EvictGroup", func(_ *testing.T, e *groupconc.GroupExecutor, _ []*groupconc.TaskHandle[int], _ []context.CancelFunc) {
			e.EvictGroup("g")
		}, false},
		{"Close", func(t *testing.T, e *groupconc.GroupExecutor, _ []*groupconc.TaskHandle[int], _ []context.CancelFunc) {
			assert.NoError(t, e.Close())
		}, true},
	}
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := groupconc.New(allLayersPolicy(t))
				defer e.Close()
				gate := make(chan struct{})
				running := []*groupconc.TaskHandle[int]{
					submit(t, t.Context(), e, "g", "run0", gated(gate, 0)),
					submit(t, t.Context(), e, "g", "run1", gated(gate, 1)),
				}
				synctest.Wait()
				// wait0 waits for concurrency, wait1 for the bulkhead, wait2
				// and wait3 for a global permit.
				var (
					waiting []*groupconc.TaskHandle[int]
					cancels []context.CancelFunc
					ran     [4]atomic.Bool
				)
				for i := range 4 {
					ctx, cancel := context.WithCancel(t.Context())
					defer cancel()
					cancels = append(cancels, cancel)
					waiting = append(waiting, submit(t, ctx, e, "g", fmt.Sprint("wait", i), neverRuns(&ran[i])))
					synctest.Wait()
				}
				gs, ok := e.GroupStats("g")
				require.True(t, ok)
				require.Equal(t, 2, gs.Running, "precondition: running")
				require.Equal(t, 3, gs.InFlight, "precondition: past the bulkhead")
				require.Equal(t, 4, gs.Waiting, "precondition: waiting")
				require.Equal(t, 4, e.Stats().GlobalInFlight, "precondition: global in flight")

				rt.cancel(t, e, waiting, cancels)
				synctest.Wait()
				for i, h := range waiting {
					require.True(t, h.IsDone(), "waiting task %d not completed", i)
					r := h.Wait()
					assert.Equal(t, groupconc.StatusCancelled, r.Status, "waiting task %d", i)
					assert.ErrorIs(t, r.Err, context.Canceled, "waiting task %d", i)
					assert.False(t, ran[i].Load(), "cancelled waiting task %d ran", i)
				}
				for i, h := range running {
					assert.False(t, h.IsDone(), "running task %d completed before its function returned", i)
				}
				openGate(t, gate, running, "running")
				synctest.Wait()
				assert.NoError(t, e.Quiescent())
				s := e.Stats()
				assert.Zero(t, s.GlobalInFlight, "Stats.GlobalInFlight")
				assert.Zero(t, s.Running, "Stats.Running")
				assert.Zero(t, s.Waiting, "Stats.Waiting")
				assert.Equal(t, uint64(6), s.Submitted, "Stats.Submitted")
				assert.Equal(t, uint64(4), s.Cancelled, "Stats.Cancelled")
				assert.Equal(t, uint64(2), s.Succeeded, "Stats.Succeeded")

				if rt.closes {
					_, err := groupconc.Submit(t.Context(), e, "g", "late", gated(nil, 0))
					assert.ErrorIs(t, err, groupconc.ErrClosed)
					return
				}
				fullBatch(t, e, "g")
			})
		})
	}
}

// The running tasks react to the cancel and release their permits at once,
// racing the cancel's spread to the waiting tasks: those must still end
// CANCELLED, never run.
func TestTasksWaitingWhenTheirGroupOrExecutorIsCancelledNeverRun(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		routes := []struct {
			name            string
			runKey, waitKey string // runners hold every permit the waiters need
			cancel          func(e *groupconc.GroupExecutor)
		}{
			{"ShutdownGroup", "g", "g", func(e *groupconc.GroupExecutor) { e.ShutdownGroup("g") }},
			{"EvictGroup", "g", "g", func(e *groupconc.GroupExecutor) { e.EvictGroup("g") }},
			{"Close", "g", "g", func(e *groupconc.GroupExecutor) { _ = e.Close() }},
			{"Close across groups", "a", "b", func(e *groupconc.GroupExecutor) { _ = e.Close() }},
		}
		for _, rt := range routes {
			t.Run(rt.name, func(t *testing.T) {
				for range 25 { // the window is narrow: try it several times
					synctest.Test(t, func(t *testing.T) {
						e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().Isolation(mode).
							GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(4)))
						defer e.Close()
						var hs []*groupconc.TaskHandle[int]
						for i := range 4 {
							hs = append(hs, submit(t, t.Context(), e, rt.runKey, fmt.Sprint("run", i), func(ctx context.Context) (int, error) {
								<-ctx.Done()
								return 0, ctx.Err()
							}))
						}
						var ran atomic.Int32
						for i := range 12 {
							hs = append(hs, submit(t, t.Context(), e, rt.waitKey, fmt.Sprint("wait", i), func(context.Context) (int, error) {
								ran.Add(1)
								return 1, nil
							}))
						}
						synctest.Wait()
						rt.cancel(e)
						for _, h := range hs {
							r := h.Wait()
							if !assert.Equal(t, groupconc.StatusCancelled, r.Status, "task %s: %v", h.TaskID(), r.Err) {
								break
							}
						}
						assert.Zero(t, ran.Load(), "waiting tasks that ran after %s", rt.name)
					})
					if t.Failed() {
						return
					}
				}
			})
		}
	})
}

// waitLayer configures exactly one limited layer, of capacity cap, with a
// queue threshold (-1: none) on that layer, and names the group key of the
// i-th task so that all tasks meet at that layer.
type waitLayer struct {
	name   string
	policy func(cap, queue int) *groupconc.PolicyBuilder
	key    func(i int) string
}

var waitLayers = []waitLayer{
	{
		name: "global",
		policy: func(cap, queue int) *groupconc.PolicyBuilder {
			b := builder().GlobalMaxInFlight(cap).DefaultMaxConcurrencyPerGroup(groupconc.Unlimited)
			if queue >= 0 {
				b.GlobalQueueThreshold(queue)
			}
			return b
		},
		key: func(i int) string { return fmt.Sprintf("g%d", i) },
	},
	{
		name: "bulkhead",
		policy: func(cap, queue int) *groupconc.PolicyBuilder {
			b := builder().DefaultMaxInFlightPerGroup(cap).DefaultMaxConcurrencyPerGroup(groupconc.Unlimited)
			if queue >= 0 {
				b.DefaultQueueThresholdPerGroup(queue)
			}
			return b
		},
		key: func(int) string { return "a" },
	},
	{
		name: "concurrency",
		policy: func(cap, queue int) *groupconc.PolicyBuilder {
			b := builder().DefaultMaxConcurrencyPerGroup(cap)
			if queue >= 0 {
				b.DefaultQueueThresholdPerGroup(queue)
			}
			return b
		},
		key: func(int) string { return "a" },
	},
}

// A cancelled waiter at the head of a layer's queue must not strand the
// waiters behind it when a permit frees in the same step. With weight-1
// permits either the head waiter got the permit before its cancellation (and
// runs), or it is cancelled and the next waiter gets the permit: in no case
// is the permit lost. Repeated, since the step is a real race.
func TestCancelledWaiterDoesNotStrandOthers(t *testing.T) {
	for _, layer := range waitLayers {
		for _, route := range []string{"ctx", "handle", "ctx-first", "handle-first"} {
			t.Run(layer.name+"/"+route, func(t *testing.T) {
				for range 20 {
					synctest.Test(t, func(t *testing.T) { checkCancelledWaiter(t, layer, route) })
				}
			})
		}
	}
}

func checkCancelledWaiter(t *testing.T, layer waitLayer, route string) {
	r := newEnv(t, layer.policy(1, -1))
	holdGate := make(chan struct{})
	hold := r.submit(layer.key(0), block(holdGate))
	synctest.Wait()
	require.True(t, r.started(hold))

	ctx0, cancel0 := context.WithCancel(r.ctx)
	defer cancel0()
	gates := make([]chan struct{}, 4)
	ws := make([]*groupconc.TaskHandle[int], 4)
	for i := range ws {
		gates[i] = make(chan struct{})
		ctx := r.ctx
		if i == 0 {
			ctx = ctx0
		}
		ws[i] = r.submitCtx(ctx, layer.key(i+1), block(gates[i]))
		synctest.Wait() // parked in Acquire before the next one arrives
	}
	require.Zero(t, r.countStarted(ws...), "waiters must wait")

	cancel := func() { cancel0() }
	if strings.HasPrefix(route, "handle") {
		cancel = func() { ws[0].Cancel() }
	}
	if strings.HasSuffix(route, "-first") {
		cancel()
		synctest.Wait()
		close(holdGate)
	} else {
		// Cancel the head waiter and free the permit in one step.
		go cancel()
		close(holdGate)
	}
	synctest.Wait()

	require.True(t, ws[0].IsDone() || r.started(ws[0]), "the head waiter is cancelled or runs")
	assert.Equal(t, 1, r.countStarted(ws...), "the freed permit went to exactly one waiter")
	if !r.started(ws[0]) {
		assert.Equal(t, groupconc.StatusCancelled, ws[0].Wait().Status)
		assert.True(t, r.started(ws[1]), "the waiter behind the cancelled head must get the permit")
	}
	for _, g := range gates {
		close(g)
	}
	r.finish()
}

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

// A waiter whose caller context is cancelled, where
// that same cancellation makes the running task return and hand its permit
// to the waiter. The waiter's context was done before it held its permits,
// so it must end CANCELLED without running (README "Outcomes and errors"). The caller's
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
