package groupconc_test

// Cancellation by every route, at every layer and at every stage: a
// cancelled task never runs, gives back exactly what it held, and keeps its
// cause.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

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

// TestCancelKeepsItsCauseWhenTheOwnerClosesTheContextMeanwhile: a task
// leaving its line as its caller's context ends is ended by the goroutine
// that took it out. ExecuteAll's Cancel of it, with the context's cause,
// may claim it first. The owner's finish then loses the claim and closes
// the task's context, before Cancel records its cause. The result's Err is
// still Cancel's cause, not context.Canceled alone.
func TestCancelKeepsItsCauseWhenTheOwnerClosesTheContextMeanwhile(t *testing.T) {
	stop := errors.New("stop")
	err := groupconc.CancelCauseAfterClose(fmt.Errorf("%w: %w", context.Canceled, stop))
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, err, stop)
}
