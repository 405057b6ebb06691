package groupconc_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exitPath is one way for a task to leave the executor, run against an
// executor whose one limited layer (cap 2) is held by one other task.
type exitPath struct {
	name   string
	queue  int                            // queue threshold of the limited layer; -1 none
	policy func(*groupconc.PolicyBuilder) // extra settings
	// run makes one task leave by this path; fill is a gate of a task that
	// holds the layer's other permit, when the path needs the layer full.
	// It runs inside the test's synctest bubble, so a wait for a deadline
	// in it moves the fake clock.
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
			<-ctx.Done() // the deadline passes (on the bubble's clock)
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
			assert.Equal(t, "groupconc: runtime.Goexit called on the task's goroutine", res.Err.Error(), "not a panic's message")
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
			time.Sleep(time.Hour) // fake clock: however long it waits, it stays stuck
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
