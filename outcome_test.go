package groupconc_test

// What a task's function does decides its outcome; a panic or
// runtime.Goexit never escapes, and the permits are back before the handle
// completes, whatever the way out.

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

func TestTaskOutcomeFollowsWhatTheFunctionReturns(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		type trigger func(e *groupconc.GroupExecutor, cancelCaller context.CancelFunc)
		var (
			none         trigger = func(*groupconc.GroupExecutor, context.CancelFunc) {}
			cancelCaller trigger = func(_ *groupconc.GroupExecutor, c context.CancelFunc) { c() }
			stopGroup    trigger = func(e *groupconc.GroupExecutor, _ context.CancelFunc) { e.ShutdownGroup("g") }
		)
		waitDone := func(ctx context.Context) { <-ctx.Done() }
		errDoneOpen := errors.New("Err set but Done still open")
		polled := func(ctx context.Context) (int, error) {
			if !pollDone(ctx) {
				return 0, errDoneOpen
			}
			return 0, ctx.Err()
		}
		cases := []struct {
			name       string
			fn         groupconc.Task[int]
			timeout    time.Duration // caller context deadline, if any
			trigger    trigger
			wantStatus groupconc.TaskStatus
			wantValue  int
			wantErr    error // nil: Err must be nil
		}{
			{
				name:       "value and nil error is SUCCESS",
				fn:         func(context.Context) (int, error) { return 42, nil },
				trigger:    none,
				wantStatus: groupconc.StatusSuccess, wantValue: 42,
			},
			{
				name:       "error is FAILED with that error",
				fn:         func(context.Context) (int, error) { return 0, errBoom },
				trigger:    none,
				wantStatus: groupconc.StatusFailed, wantErr: errBoom,
			},
			{
				name:       "context.Canceled while context live is FAILED",
				fn:         func(context.Context) (int, error) { return 0, context.Canceled },
				trigger:    none,
				wantStatus: groupconc.StatusFailed, wantErr: context.Canceled,
			},
			{
				name:       "DeadlineExceeded while context live is FAILED",
				fn:         func(context.Context) (int, error) { return 0, context.DeadlineExceeded },
				trigger:    none,
				wantStatus: groupconc.StatusFailed, wantErr: context.DeadlineExceeded,
			},
			{
				name:       "ctx.Err after caller cancel is CANCELLED",
				fn:         func(ctx context.Context) (int, error) { waitDone(ctx); return 0, ctx.Err() },
				trigger:    cancelCaller,
				wantStatus: groupconc.StatusCancelled, wantErr: context.Canceled,
			},
			{
				name: "wrapped ctx.Err after caller cancel is CANCELLED",
				fn: func(ctx context.Context) (int, error) {
					waitDone(ctx)
					return 0, fmt.Errorf("stopped: %w", ctx.Err())
				},
				trigger:    cancelCaller,
				wantStatus: groupconc.StatusCancelled, wantErr: context.Canceled,
			},
			{
				name: "DeadlineExceeded after caller deadline is CANCELLED",
				fn: func(ctx context.Context) (int, error) {
					waitDone(ctx)
					return 0, context.DeadlineExceeded
				},
				timeout:    time.Second,
				trigger:    none,
				wantStatus: groupconc.StatusCancelled, wantErr: context.DeadlineExceeded,
			},
			{
				name:       "ctx.Err after ShutdownGroup is CANCELLED",
				fn:         func(ctx context.Context) (int, error) { waitDone(ctx); return 0, ctx.Err() },
				trigger:    stopGroup,
				wantStatus: groupconc.StatusCancelled, wantErr: context.Canceled,
			},
			{
				name:       "polled ctx.Err after caller cancel is CANCELLED",
				fn:         polled,
				trigger:    cancelCaller,
				wantStatus: groupconc.StatusCancelled, wantErr: context.Canceled,
			},
			{
				name:       "polled ctx.Err after ShutdownGroup is CANCELLED",
				fn:         polled,
				trigger:    stopGroup,
				wantStatus: groupconc.StatusCancelled, wantErr: context.Canceled,
			},
			{
				name:       "polled ctx.Err after caller deadline is CANCELLED",
				fn:         polled,
				timeout:    time.Second,
				trigger:    none,
				wantStatus: groupconc.StatusCancelled, wantErr: context.DeadlineExceeded,
			},
			{
				name:       "other error after cancel is FAILED",
				fn:         func(ctx context.Context) (int, error) { waitDone(ctx); return 0, errBoom },
				trigger:    cancelCaller,
				wantStatus: groupconc.StatusFailed, wantErr: errBoom,
			},
			{
				name:       "value and nil error after cancel is SUCCESS",
				fn:         func(ctx context.Context) (int, error) { waitDone(ctx); return 5, nil },
				trigger:    cancelCaller,
				wantStatus: groupconc.StatusSuccess, wantValue: 5,
			},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := groupconc.New(mustBuild(t, builder().Isolation(mode)))
					defer e.Close()
					ctx, cancel := context.WithCancel(t.Context())
					defer cancel()
					if c.timeout > 0 {
						ctx, cancel = context.WithTimeout(ctx, c.timeout)
						defer cancel()
					}
					h := submit(t, ctx, e, "g", "t", c.fn)
					synctest.Wait()
					c.trigger(e, cancel)
					r, err := h.Await(t.Context())
					assert.NoError(t, err, "Await error: the task's own outcome is in the result")
					assert.Equal(t, c.wantStatus, r.Status)
					assert.Equal(t, c.wantValue, r.Value)
					if c.wantErr == nil {
						assert.NoError(t, r.Err)
					} else {
						assert.ErrorIs(t, r.Err, c.wantErr)
					}
					if c.wantErr == errBoom {
						assert.Equal(t, errBoom, r.Err, "a task's own error is returned unwrapped")
					}
					synctest.Wait()
					assert.NoError(t, e.Quiescent())
				})
			})
		}
	})
}

func TestTaskPanicOrGoexitFailsWithPanicErrorAndReleasesPermits(t *testing.T) {
	cases := []struct {
		name  string
		fn    func()
		check func(t *testing.T, pe *groupconc.PanicError)
	}{
		{
			name: "panic string",
			fn:   func() { panic("x") },
			check: func(t *testing.T, pe *groupconc.PanicError) {
				assert.Equal(t, "x", pe.Value)
				assert.NotEmpty(t, pe.Stack)
			},
		},
		{
			name: "panic error",
			fn:   func() { panic(errBoom) },
			check: func(t *testing.T, pe *groupconc.PanicError) {
				assert.ErrorIs(t, pe, errBoom, "errors.Is through *PanicError")
				assert.NotEmpty(t, pe.Stack)
			},
		},
		{
			name: "panic nil",
			fn:   func() { panic(nil) },
			check: func(t *testing.T, pe *groupconc.PanicError) {
				var pn *runtime.PanicNilError
				assert.ErrorAs(t, pe, &pn, "panic(nil) value")
				assert.NotEmpty(t, pe.Stack)
			},
		},
		{
			name:  "runtime.Goexit",
			fn:    runtime.Goexit,
			check: func(*testing.T, *groupconc.PanicError) {},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := groupconc.New(allLayersPolicy(t))
				defer e.Close()
				gate := make(chan struct{})
				bad := make([]*groupconc.TaskHandle[int], 2)
				for i := range bad {
					bad[i] = submit(t, t.Context(), e, "g", fmt.Sprint("bad", i), func(context.Context) (int, error) {
						<-gate
						c.fn()
						return 1, nil
					})
				}
				// Queued behind the failing tasks: one waits for concurrency,
				// one for the bulkhead.
				nextGate := make(chan struct{})
				var next gauge
				var queued []*groupconc.TaskHandle[int]
				for i := range 2 {
					queued = append(queued, submit(t, t.Context(), e, "g", fmt.Sprint("next", i), gated(nextGate, i, &next)))
				}
				synctest.Wait()
				require.Zero(t, next.cur.Load(), "precondition: queued tasks wait")
				close(gate)
				for _, h := range bad {
					r := h.Wait() // must not hang
					assert.Equal(t, groupconc.StatusFailed, r.Status)
					var pe *groupconc.PanicError
					if assert.ErrorAs(t, r.Err, &pe) {
						c.check(t, pe)
					}
				}
				synctest.Wait()
				assert.EqualValues(t, 2, next.cur.Load(), "queued tasks running once the failed ones released their permits")
				gs, ok := e.GroupStats("g")
				require.True(t, ok)
				assert.Equal(t, 2, gs.Running, "GroupStats.Running")
				openGate(t, nextGate, queued, "queued")
				synctest.Wait()
				assert.NoError(t, e.Quiescent())
				assert.Equal(t, uint64(2), e.Stats().Failed, "Stats.Failed")
				fullBatch(t, e, "g")
			})
		})
	}
}

func TestPermitsAreReleasedBeforeTheHandleCompletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every layer limited to 1 and no task may wait: a task submitted
		// while any permit of the previous one is still held is rejected.
		p := mustBuild(t, groupconc.NewPolicyBuilder().
			GlobalMaxInFlight(1).GlobalQueueThreshold(0).
			DefaultMaxInFlightPerGroup(1).DefaultMaxConcurrencyPerGroup(1).
			DefaultQueueThresholdPerGroup(0))
		e := groupconc.New(p)
		defer e.Close()
		var ran atomic.Int64
		submitNext := func(i int) *groupconc.TaskHandle[int] {
			return submit(t, t.Context(), e, "g", fmt.Sprint(i), func(context.Context) (int, error) {
				ran.Add(1)
				return i, nil
			})
		}
		const n = 300
		h := submitNext(0)
		for i := 1; i <= n; i++ {
			if i%2 == 0 {
				<-h.Done()
			} else {
				// Spin rather than block, so that on a multi-core run this
				// goroutine sees the handle complete the instant it does,
				// not once the task's goroutine has moved on.
				for spins := 0; !h.IsDone(); spins++ {
					if spins%(1<<12) == 1<<12-1 {
						runtime.Gosched()
					}
				}
			}
			// Look, and submit the next task, before anything else.
			s := e.Stats()
			gs, ok := e.GroupStats("g")
			var next *groupconc.TaskHandle[int]
			if i < n {
				next = submitNext(i)
			}
			require.Zero(t, s.GlobalInFlight, "Stats.GlobalInFlight right after task %d completed", i-1)
			require.Zero(t, s.Running, "Stats.Running right after task %d completed", i-1)
			require.True(t, ok)
			require.Zero(t, gs.Running, "GroupStats.Running right after task %d completed", i-1)
			require.Zero(t, gs.InFlight, "GroupStats.InFlight right after task %d completed", i-1)
			r := h.Wait()
			require.Equal(t, groupconc.StatusSuccess, r.Status,
				"task %d, submitted right after task %d completed, should start at once: %v", i-1, i-2, r.Err)
			require.Equal(t, i-1, r.Value)
			h = next
		}
		assert.EqualValues(t, n, ran.Load(), "tasks run")
		// And under a plain limit-1 group: the next task runs at once.
		gate := make(chan struct{})
		h1 := submit(t, t.Context(), e, "h", "1", gated(gate, 1))
		synctest.Wait()
		close(gate)
		require.Equal(t, groupconc.StatusSuccess, h1.Wait().Status)
		gs, ok := e.GroupStats("h")
		require.True(t, ok)
		assert.Zero(t, gs.Running, "GroupStats.Running right after task 1 completed")
		h2 := submit(t, t.Context(), e, "h", "2", func(context.Context) (int, error) { return 2, nil })
		r2 := h2.Wait()
		assert.Equal(t, groupconc.StatusSuccess, r2.Status, "task 2 after task 1: %v", r2.Err)
	})
}

// exitPath is one way for a task to leave the executor, run against an
// executor whose one limited layer (cap 2) is held by one other task.
type exitPath struct {
	name   string
	queue  int                            // queue threshold of the limited layer; -1 none
	policy func(*groupconc.PolicyBuilder) // extra settings
	// run makes one task leave by this path; fill is a gate of a task that
	// holds the layer's other permit, when the path needs the layer full.
	run func(r *env, layer waitLayer, fill func() chan struct{})
}

func exitPaths() []exitPath {
	value := func(v int, err error, panicWith any, goexit bool) groupconc.Task[int] {
		return func(context.Context) (int, error) {
			if goexit {
				runtime.Goexit()
			}
			if panicWith != nil {
				panic(panicWith)
			}
			return v, err
		}
	}
	plain := func(fn groupconc.Task[int]) func(r *env, layer waitLayer, _ func() chan struct{}) {
		return func(r *env, layer waitLayer, _ func() chan struct{}) {
			r.submit(layer.key(10), fn)
			synctest.Wait()
		}
	}
	rejected := func(r *env, layer waitLayer, fill func() chan struct{}) {
		gate := fill()
		h := r.submit(layer.key(10), succeed)
		synctest.Wait()
		close(gate)
		synctest.Wait()
		h.Wait()
	}
	return []exitPath{
		{name: "success", queue: -1, run: plain(succeed)},
		{name: "error", queue: -1, run: plain(value(0, errors.New("boom"), nil, false))},
		{name: "panic", queue: -1, run: plain(value(0, nil, "boom", false))},
		{name: "goexit", queue: -1, run: plain(value(0, nil, nil, true))},
		{name: "ctx-cancel-running", queue: -1, run: func(r *env, layer waitLayer, _ func() chan struct{}) {
			ctx, cancel := context.WithCancel(r.ctx)
			h := r.submitCtx(ctx, layer.key(10), blockCtx(make(chan struct{})))
			synctest.Wait()
			require.True(r.t, r.started(h))
			cancel()
			synctest.Wait()
		}},
		{name: "handle-cancel-running", queue: -1, run: func(r *env, layer waitLayer, _ func() chan struct{}) {
			h := r.submit(layer.key(10), blockCtx(make(chan struct{})))
			synctest.Wait()
			require.True(r.t, h.Cancel())
			synctest.Wait()
		}},
		{name: "pre-cancelled", queue: -1, run: func(r *env, layer waitLayer, _ func() chan struct{}) {
			ctx, cancel := context.WithCancel(r.ctx)
			cancel()
			r.submitCtx(ctx, layer.key(10), succeed)
			synctest.Wait()
		}},
		{name: "cancel-waiting", queue: -1, run: func(r *env, layer waitLayer, fill func() chan struct{}) {
			gate := fill()
			h := r.submit(layer.key(10), succeed)
			synctest.Wait()
			require.False(r.t, h.IsDone())
			require.True(r.t, h.Cancel())
			synctest.Wait()
			close(gate)
			synctest.Wait()
		}},
		{name: "deadline-waiting", queue: -1, run: func(r *env, layer waitLayer, fill func() chan struct{}) {
			gate := fill()
			ctx, cancel := context.WithTimeout(r.ctx, time.Second)
			defer cancel()
			h := r.submitCtx(ctx, layer.key(10), succeed)
			time.Sleep(2 * time.Second) // fake clock: past the deadline
			synctest.Wait()
			require.Equal(r.t, groupconc.StatusCancelled, h.Wait().Status)
			close(gate)
			synctest.Wait()
		}},
		{name: "shutdown-group-waiting", queue: -1, run: func(r *env, layer waitLayer, fill func() chan struct{}) {
			gate := fill()
			h := r.submit(layer.key(10), succeed)
			synctest.Wait()
			r.e.ShutdownGroup(layer.key(10))
			synctest.Wait()
			require.Equal(r.t, groupconc.StatusCancelled, h.Wait().Status)
			close(gate)
			synctest.Wait()
		}},
		{name: "reject-abort", queue: 0, run: rejected},
		{name: "reject-discard", queue: 0, policy: func(b *groupconc.PolicyBuilder) { b.RejectionPolicy(groupconc.RejectDiscard) }, run: rejected},
		{name: "caller-runs", queue: 0, policy: func(b *groupconc.PolicyBuilder) { b.RejectionPolicy(groupconc.RejectCallerRuns) }, run: rejected},
		{name: "caller-runs-panic", queue: 0, policy: func(b *groupconc.PolicyBuilder) { b.RejectionPolicy(groupconc.RejectCallerRuns) }, run: func(r *env, layer waitLayer, fill func() chan struct{}) {
			gate := fill()
			h := r.submit(layer.key(10), value(0, nil, "boom", false))
			synctest.Wait()
			require.Equal(r.t, groupconc.StatusFailed, h.Wait().Status)
			close(gate)
			synctest.Wait()
		}},
		{name: "handler-run", queue: 0, policy: func(b *groupconc.PolicyBuilder) {
			b.RejectionHandler(func(ctx context.Context, rj *groupconc.Rejection) (any, error) { return rj.Run(ctx) })
		}, run: rejected},
		{name: "handler-fallback", queue: 0, policy: func(b *groupconc.PolicyBuilder) {
			b.RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) { return 7, nil })
		}, run: rejected},
		{name: "handler-panic", queue: 0, policy: func(b *groupconc.PolicyBuilder) {
			b.RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) { panic("handler boom") })
		}, run: rejected},
	}
}

// Every way out of the executor releases each permit exactly once. A
// double release while another task holds a permit is silent in x/sync, so
// besides Quiescent the test probes the effective capacity before the
// holder lets go: exactly cap-1 new tasks may start.
func TestEveryExitPathReleasesExactlyOnce(t *testing.T) {
	const capacity = 2
	for _, layer := range waitLayers {
		for _, exit := range exitPaths() {
			t.Run(layer.name+"/"+exit.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					b := layer.policy(capacity, exit.queue)
					if exit.policy != nil {
						exit.policy(b)
					}
					r := newEnv(t, b)
					r.o.handler = strings.HasPrefix(exit.name, "handler")
					holdGate := make(chan struct{})
					r.submit(layer.key(0), block(holdGate))
					synctest.Wait()
					fill := func() chan struct{} {
						g := make(chan struct{})
						h := r.submit(layer.key(1), block(g))
						synctest.Wait()
						require.True(t, r.started(h))
						return g
					}
					exit.run(r, layer, fill)
					synctest.Wait()

					// One permit is held by the holder: exactly cap-1 may start.
					probeGate := make(chan struct{})
					var probes []*groupconc.TaskHandle[int]
					for i := range capacity {
						probes = append(probes, r.submit(layer.key(20+i), block(probeGate)))
					}
					synctest.Wait()
					assert.Equal(t, capacity-1, r.countPermitted(probes...), "effective capacity after %s", exit.name)
					close(probeGate)
					close(holdGate)
					r.finish()
				})
			})
		}
	}

}

// A panic in the function becomes FAILED with a *PanicError carrying
// the value and the stack, releases every permit, and fires OnCompleted.
func TestPanicBecomesFailedWithValueAndStack(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		sentinel := errors.New("sentinel")
		cases := []struct {
			name  string
			value any
			check func(t *testing.T, pe *groupconc.PanicError, err error)
		}{
			{"string", "x", func(t *testing.T, pe *groupconc.PanicError, _ error) { assert.Equal(t, "x", pe.Value) }},
			{"error", sentinel, func(t *testing.T, pe *groupconc.PanicError, err error) {
				assert.ErrorIs(t, err, sentinel, "errors.Is sees through panic(err)")
			}},
			{"nil", nil, func(t *testing.T, pe *groupconc.PanicError, _ error) {
				var pn *runtime.PanicNilError
				assert.ErrorAs(t, pe.Value.(error), &pn, "panic(nil) recovers as *runtime.PanicNilError")
			}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					r := newEnv(t, builder().Isolation(mode).GlobalMaxInFlight(2).DefaultMaxInFlightPerGroup(2).DefaultMaxConcurrencyPerGroup(1))
					h := r.submit("a", func(context.Context) (int, error) { panic(c.value) })
					res := h.Wait()
					assert.Equal(t, groupconc.StatusFailed, res.Status)
					var pe *groupconc.PanicError
					require.ErrorAs(t, res.Err, &pe)
					assert.Contains(t, string(pe.Stack), "panic", "the stack is kept")
					assert.Contains(t, string(pe.Stack), "Test", "the stack shows the panicking function")
					c.check(t, pe, res.Err)
					synctest.Wait()
					require.NoError(t, r.e.Quiescent())
					r.finish()
				})
			})
		}
	})
}

func TestWholeGroupPanickingDoesNotStrandQueuedTasks(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			r := newEnv(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(2).GlobalMaxInFlight(3))
			gate := make(chan struct{})
			var hs []*groupconc.TaskHandle[int]
			for range 8 {
				hs = append(hs, r.submit("a", func(context.Context) (int, error) { <-gate; panic("all of them") }))
			}
			synctest.Wait()
			require.Equal(t, 2, r.countStarted(hs...))
			close(gate)
			synctest.Wait()
			for _, h := range hs {
				assert.Equal(t, groupconc.StatusFailed, h.Wait().Status)
				assert.True(t, r.started(h), "every queued task still ran")
			}
			r.finish()
		})
	})
}

// Runtime.Goexit in the function (t.FailNow, gomock) becomes FAILED;
// the handle, the queue behind it and Shutdown never hang.
func TestGoexitBecomesFailedAndDoesNotHang(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			r := newEnv(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1))
			h := r.submit("a", func(context.Context) (int, error) { runtime.Goexit(); return 0, nil })
			next := r.submit("a", succeed)
			ctx, cancel := context.WithTimeout(r.ctx, time.Second)
			defer cancel()
			res, err := h.Await(ctx)
			require.NoError(t, err, "I7: Await must return the result, not time out")
			assert.Equal(t, groupconc.StatusFailed, res.Status)
			var pe *groupconc.PanicError
			require.ErrorAs(t, res.Err, &pe)
			assert.Contains(t, res.Err.Error(), "Goexit")
			assert.Equal(t, groupconc.StatusSuccess, next.Wait().Status, "the task queued behind it runs")
			synctest.Wait()
			require.NoError(t, r.e.Quiescent())
			r.finish()
		})
	})
}

// A task that awaits another task of its own saturated group can only
// end by its deadline: Await returns DeadlineExceeded after exactly that
// long, and then both finish. Without a deadline, Close resolves both.
func TestNestedAwaitOnSaturatedGroupEndsByDeadline(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			r := newEnv(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1))
			var child *groupconc.TaskHandle[int]
			var waited time.Duration
			parent := r.submit("a", func(ctx context.Context) (int, error) {
				child = r.submit("a", succeed)
				actx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				start := time.Now()
				_, err := child.Await(actx)
				waited = time.Since(start)
				return 0, err
			})
			res := parent.Wait()
			assert.Equal(t, 5*time.Second, waited)
			assert.Equal(t, groupconc.StatusFailed, res.Status, "the parent's own context is not done: its DeadlineExceeded is a failure")
			assert.ErrorIs(t, res.Err, context.DeadlineExceeded)
			assert.Equal(t, groupconc.StatusSuccess, child.Wait().Status, "the child runs once the parent lets go")
			r.finish()
		})
	})
}

func TestNestedWaitWithoutDeadlineIsResolvedByClose(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			r := newEnv(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1))
			childCh := make(chan *groupconc.TaskHandle[int], 1)
			parent := r.submit("a", func(ctx context.Context) (int, error) {
				child := r.submit("a", succeed)
				childCh <- child
				return child.Wait().Value, nil
			})
			child := <-childCh
			time.Sleep(time.Hour)
			synctest.Wait()
			require.False(t, parent.IsDone(), "self-deadlock, as documented")
			require.NoError(t, r.e.Close())
			synctest.Wait()
			assert.Equal(t, groupconc.StatusCancelled, child.Wait().Status)
			assert.Equal(t, groupconc.StatusSuccess, parent.Wait().Status)
			r.finish()
		})
	})
}
