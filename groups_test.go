package groupconc_test

// Groups: lazy creation, ShutdownGroup and EvictGroup, and the old state
// of an evicted group.

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShutdownGroupCancelsOnlyThatGroupAndAcceptsLaterTasks(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := groupconc.New(mustBuild(t, builder().Isolation(mode))) // concurrency 1
			defer e.Close()
			gate := make(chan struct{})
			gRunning := submit(t, t.Context(), e, "g", "running", func(ctx context.Context) (int, error) {
				<-ctx.Done()
				return 0, ctx.Err()
			})
			var queuedRan atomic.Bool
			gQueued := submit(t, t.Context(), e, "g", "queued", neverRuns(&queuedRan))
			var otherCancelled atomic.Bool
			other := submit(t, t.Context(), e, "h", "other", func(ctx context.Context) (int, error) {
				select {
				case <-gate:
					return 3, nil
				case <-ctx.Done():
					otherCancelled.Store(true)
					return 0, ctx.Err()
				}
			})
			var otherQueuedRan atomic.Bool
			otherQueued := submit(t, t.Context(), e, "h", "queued", func(context.Context) (int, error) {
				otherQueuedRan.Store(true)
				return 4, nil
			})
			synctest.Wait()

			e.ShutdownGroup("unknown") // a group never used: nothing to do
			e.EvictGroup("unknown")
			_, ok := e.GroupStats("unknown")
			assert.False(t, ok, "ShutdownGroup or EvictGroup created an unknown group")
			assert.Equal(t, 2, e.Stats().Groups, "Stats.Groups")

			e.ShutdownGroup("g")
			synctest.Wait()
			assert.Equal(t, groupconc.StatusCancelled, gRunning.Wait().Status, "running task of the group")
			r := gQueued.Wait()
			assert.Equal(t, groupconc.StatusCancelled, r.Status, "waiting task of the group")
			assert.ErrorIs(t, r.Err, context.Canceled)
			assert.False(t, queuedRan.Load(), "cancelled waiting task ran")
			assert.False(t, other.IsDone(), "task of another group completed")
			assert.False(t, otherCancelled.Load(), "task of another group saw its context cancelled")
			assert.False(t, otherQueued.IsDone(), "waiting task of another group completed")

			later := submit(t, t.Context(), e, "g", "later", func(context.Context) (int, error) { return 5, nil })
			r = later.Wait()
			assert.Equal(t, groupconc.StatusSuccess, r.Status, "task submitted after ShutdownGroup: %v", r.Err)
			assert.Equal(t, 5, r.Value)
			gs, ok := e.GroupStats("g")
			assert.True(t, ok, "group known after ShutdownGroup")
			assert.Equal(t, 1, gs.MaxConcurrency)

			close(gate)
			assert.Equal(t, groupconc.StatusSuccess, other.Wait().Status)
			assert.Equal(t, groupconc.StatusSuccess, otherQueued.Wait().Status)
			assert.True(t, otherQueuedRan.Load())
			synctest.Wait()
			assert.NoError(t, e.Quiescent())
		})
	})
}

func TestEvictGroupCancelsItsTasksAndResolvesItsLimitsAgain(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			var calls atomic.Int32
			p := mustBuild(t, groupconc.NewPolicyBuilder().Isolation(mode).ConcurrencyResolver(func(key string) int {
				if calls.Add(1) == 1 {
					return 1
				}
				return 3
			}))
			e := groupconc.New(p)
			defer e.Close()
			running := submit(t, t.Context(), e, "g", "running", func(ctx context.Context) (int, error) {
				<-ctx.Done()
				return 0, ctx.Err()
			})
			var ran [2]atomic.Bool
			queued := []*groupconc.TaskHandle[int]{
				submit(t, t.Context(), e, "g", "q0", neverRuns(&ran[0])),
				submit(t, t.Context(), e, "g", "q1", neverRuns(&ran[1])),
			}
			synctest.Wait()
			assert.EqualValues(t, 1, calls.Load(), "resolver calls for one group: limits fixed on first use")
			gs, ok := e.GroupStats("g")
			require.True(t, ok)
			require.Equal(t, 1, gs.MaxConcurrency)

			e.EvictGroup("g")
			synctest.Wait()
			assert.Equal(t, groupconc.StatusCancelled, running.Wait().Status, "running task of the evicted group")
			for i, h := range queued {
				assert.Equal(t, groupconc.StatusCancelled, h.Wait().Status, "waiting task %d of the evicted group", i)
				assert.False(t, ran[i].Load(), "cancelled waiting task %d ran", i)
			}
			_, ok = e.GroupStats("g")
			assert.False(t, ok, "evicted group still in GroupStats")
			assert.Zero(t, e.Stats().Groups, "Stats.Groups after eviction")

			gate := make(chan struct{})
			var g gauge
			var hs []*groupconc.TaskHandle[int]
			for i := range 5 {
				hs = append(hs, submit(t, t.Context(), e, "g", fmt.Sprint(i), gated(gate, i, &g)))
			}
			synctest.Wait()
			assert.EqualValues(t, 2, calls.Load(), "resolver calls after eviction")
			gs, ok = e.GroupStats("g")
			require.True(t, ok)
			assert.Equal(t, 3, gs.MaxConcurrency, "limit of the group after eviction")
			assert.EqualValues(t, 3, g.cur.Load(), "tasks running under the re-resolved limit")
			openGate(t, gate, hs, "gated")
			assert.EqualValues(t, 3, g.max.Load())
			assert.EqualValues(t, 2, calls.Load(), "resolver calls")
			synctest.Wait()
			assert.NoError(t, e.Quiescent())
		})
	})
}

func TestShutdownGroupKeepsOneState(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			r := newEnv(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(2))
			gate := make(chan struct{})
			r.submit("a", block(gate))
			r.submit("a", block(gate))
			w := r.submit("a", block(gate))
			synctest.Wait()
			r.e.ShutdownGroup("a")
			synctest.Wait()
			assert.Equal(t, groupconc.StatusCancelled, w.Wait().Status)
			later := []*groupconc.TaskHandle[int]{r.submit("a", block(gate)), r.submit("a", block(gate))}
			synctest.Wait()
			assert.Zero(t, r.countStarted(later...), "same state: the two old tasks still hold both permits")
			assert.Equal(t, 1, r.e.Stats().Groups)
			close(gate)
			r.finish()
			assert.EqualValues(t, 2, r.o.groupMax("a"))
		})
	})
}

// ShutdownGroup with the group's tasks queued while holding global
// permits: the queued ones end CANCELLED at once, the running ones see their
// context cancelled (and here end CANCELLED by returning its error), the
// global permits come back for other groups, and the group accepts new
// tasks afterwards.
func TestShutdownGroupCancelsQueuedTasksAndFreesGlobalPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newEnv(t, builder().GlobalMaxInFlight(5).DefaultMaxConcurrencyPerGroup(1))
		gGate, hGate := make(chan struct{}), make(chan struct{})
		hRun := r.submit("h", blockCtx(hGate))
		gRun := r.submit("g", blockCtx(gGate))
		var gQueued []*groupconc.TaskHandle[int]
		for range 5 { // 3 hold a global permit, 2 wait for one
			gQueued = append(gQueued, r.submit("g", blockCtx(gGate)))
		}
		synctest.Wait()
		require.True(t, r.started(gRun))
		require.True(t, r.started(hRun))
		require.Equal(t, 5, r.e.Stats().GlobalInFlight)
		hNext := r.submit("h2", blockCtx(hGate))
		synctest.Wait()
		require.False(t, r.started(hNext), "global cap full")

		r.e.ShutdownGroup("g")
		synctest.Wait()
		assert.Equal(t, groupconc.StatusCancelled, gRun.Wait().Status, "the running task returned its context's error")
		for _, h := range gQueued {
			res := h.Wait()
			assert.Equal(t, groupconc.StatusCancelled, res.Status)
			assert.ErrorIs(t, res.Err, context.Canceled)
			assert.False(t, r.started(h))
		}
		assert.True(t, r.started(hNext), "g's global permits came back")
		assert.False(t, hRun.IsDone(), "other groups are untouched")

		gAgain := r.submit("g", blockCtx(gGate))
		synctest.Wait()
		assert.True(t, r.started(gAgain), "the group accepts and runs new tasks")
		close(gGate)
		close(hGate)
		r.finish()
	})
}

// TestShutdownGroupFreesTheQueueSlotsOfTheTasksItCancelsBeforeItReturns:
// "later submissions to g are accepted". A task submitted as ShutdownGroup
// returns must find the slots of the waiting tasks it cancelled free, as a
// Cancel's caller does, even while a running task that ignores its context
// keeps the group's permit.
func TestShutdownGroupFreesTheQueueSlotsOfTheTasksItCancelsBeforeItReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for round := range 20 {
			e := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(1))
			k := newGatedTask(t, 0)
			hr := submitGated(t, e, "g", "r", k, groupconc.SubmitOptions{})
			hw := submit(t, t.Context(), e, "g", "w", succeed) // takes the one slot
			e.ShutdownGroup("g")
			hn := submit(t, t.Context(), e, "g", "n", succeed)
			k.Release()
			require.Equal(t, groupconc.StatusSuccess, hn.Wait().Status, "round %d: the task submitted after ShutdownGroup", round)
			assert.Equal(t, groupconc.StatusCancelled, hw.Wait().Status)
			quiesce(t, e, hr, hw, hn)
		}
	})
}
