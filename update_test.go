package groupconc_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// The behaviour suite of live limits (docs/live-limits.md):
// UpdatePolicy, in both isolation modes where they promise the same.

// upUpdate builds b and makes it e's policy; both must succeed.
func upUpdate(t *testing.T, e *groupconc.GroupExecutor, b *groupconc.PolicyBuilder) {
	t.Helper()
	require.NoError(t, e.UpdatePolicy(mustBuild(t, b)))
}

// upModes runs f in a bubble once per isolation mode, with a builder of
// that mode.
func upModes(t *testing.T, f func(t *testing.T, b func() *groupconc.PolicyBuilder)) {
	upIn(t, fsModes, f)
}

// upIn is upModes for the modes given.
func upIn(t *testing.T, modes []groupconc.IsolationMode, f func(t *testing.T, b func() *groupconc.PolicyBuilder)) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f(t, func() *groupconc.PolicyBuilder { return groupconc.NewPolicyBuilder().Isolation(mode) })
			})
		})
	}
}

// upGated is a set of gated tasks whose starts and running count the test
// reads.
type upGated struct {
	starts  fsStarts
	running gauge
	tasks   map[string]*gatedTask
	hs      map[string]*groupconc.TaskHandle[int]
}

func upNewGated() *upGated {
	return &upGated{tasks: map[string]*gatedTask{}, hs: map[string]*groupconc.TaskHandle[int]{}}
}

// submit submits a gated task id to key, counted in g.running and in the
// extra gauges while it runs.
func (g *upGated) submit(t *testing.T, e *groupconc.GroupExecutor, key, id string, extra ...*gauge) *groupconc.TaskHandle[int] {
	t.Helper()
	k := newGatedTask(t, 0)
	fn := g.starts.task(id, k)
	gauges := append([]*gauge{&g.running}, extra...)
	h := submit(t, t.Context(), e, key, id, func(ctx context.Context) (int, error) {
		for _, gg := range gauges {
			gg.enter()
		}
		defer func() {
			for _, gg := range gauges {
				gg.exit()
			}
		}()
		if _, err := fn(ctx); err != nil {
			return 0, err
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("running task %s saw its context cancelled: %w", id, context.Cause(ctx))
		}
		return 1, nil
	})
	g.tasks[id], g.hs[id] = k, h
	return h
}

// submitWith submits a gated task id to key with options o, counted in no
// gauge.
func (g *upGated) submitWith(t *testing.T, e *groupconc.GroupExecutor, key, id string, o groupconc.SubmitOptions) *groupconc.TaskHandle[int] {
	t.Helper()
	k := newGatedTask(t, 0)
	h := submitGated(t, e, key, id, k, o)
	g.tasks[id], g.hs[id] = k, h
	return h
}

// release ends task id and lets the executor settle.
func (g *upGated) release(id string) {
	g.tasks[id].Release()
	synctest.Wait()
}

// started reports whether task id has started.
func (g *upGated) started(id string) bool { return g.tasks[id].started.Load() }

// finish releases every task and checks each one succeeded (a running
// task whose context was cancelled fails) and that e is quiescent.
func (g *upGated) finish(t *testing.T, e *groupconc.GroupExecutor) {
	t.Helper()
	for _, k := range g.tasks {
		k.Release()
	}
	for id, h := range g.hs {
		r := h.Wait()
		if r.Status != groupconc.StatusRejected {
			assert.Equal(t, groupconc.StatusSuccess, r.Status, "task %s: %v", id, r.Err)
		}
	}
	synctest.Wait()
	assert.NoError(t, e.Quiescent())
}

func TestUpdatePolicyRaisingAGroupLimitStartsTheWaitingTasksAtOnceInTheirOrder(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b().GlobalMaxInFlight(10).DefaultMaxConcurrencyPerGroup(1))
		g := upNewGated()
		for i := range 6 {
			g.submit(t, e, "a", fmt.Sprint(i))
			synctest.Wait()
		}
		require.Equal(t, []string{"0"}, g.starts.list())

		upUpdate(t, e, b().GlobalMaxInFlight(10).DefaultMaxConcurrencyPerGroup(3))
		synctest.Wait() // no task has finished
		assert.ElementsMatch(t, []string{"0", "1", "2"}, g.starts.list(), "started once the limit rose to 3")
		gs := groupStats(t, e, "a")
		assert.Equal(t, [3]int{3, 3, 3}, [3]int{gs.MaxConcurrency, gs.Running, gs.Waiting}, "a: limit, running, waiting")

		upUpdate(t, e, b().GlobalMaxInFlight(10).DefaultMaxConcurrencyPerGroup(5))
		synctest.Wait()
		assert.ElementsMatch(t, []string{"0", "1", "2", "3", "4"}, g.starts.list(), "started once the limit rose to 5")
		assert.False(t, g.started("5"))
		g.finish(t, e)
	})
}

func TestUpdatePolicyLoweringAGroupLimitInterruptsNothingAndHoldsTheNewLimitOnceDrained(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b().GlobalMaxInFlight(10).DefaultMaxConcurrencyPerGroup(3))
		g := upNewGated()
		var after gauge // tasks 3..7, which start under the lowered limit
		for i := range 8 {
			var extra []*gauge
			if i >= 3 {
				extra = []*gauge{&after}
			}
			g.submit(t, e, "a", fmt.Sprint(i), extra...)
			synctest.Wait()
		}
		require.EqualValues(t, 3, g.running.cur.Load())

		upUpdate(t, e, b().GlobalMaxInFlight(10).DefaultMaxConcurrencyPerGroup(1))
		synctest.Wait()
		assert.EqualValues(t, 3, g.running.cur.Load(), "running tasks after the limit fell to 1")
		gs := groupStats(t, e, "a")
		assert.Equal(t, [3]int{1, 3, 5}, [3]int{gs.MaxConcurrency, gs.Running, gs.Waiting}, "a: limit, running (above it while draining), waiting")

		g.release("0")
		g.release("1")
		assert.Len(t, g.starts.list(), 3, "a task started with 1 running under the new limit 1")
		g.release("2")
		assert.Equal(t, []string{"0", "1", "2", "3"}, g.starts.list(), "started once running fell below the new limit")
		for i := 3; i < 8; i++ {
			assert.EqualValues(t, 1, g.running.cur.Load(), "running with task %d", i)
			g.release(fmt.Sprint(i))
		}
		assert.EqualValues(t, 1, after.max.Load(), "most tasks at once under the new limit 1")
		g.finish(t, e)
	})
}

// upThreeGroupsOfFour submits tasks a0..a3, b0..b3 and c0..c3, one at a
// time, to e, whose groups run two each: six run, six wait.
func upThreeGroupsOfFour(t *testing.T, e *groupconc.GroupExecutor) *upGated {
	g := upNewGated()
	for i := range 4 {
		for _, key := range []string{"a", "b", "c"} {
			g.submit(t, e, key, fmt.Sprint(key, i))
			synctest.Wait()
		}
	}
	require.EqualValues(t, 6, g.running.cur.Load())
	return g
}

func TestUpdatePolicyGlobalCapImposedUnderLoadStartsNothingUntilRunningIsBelowItAndLiftedStartsTheRest(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b().DefaultMaxConcurrencyPerGroup(2))
		g := upThreeGroupsOfFour(t, e)

		upUpdate(t, e, b().DefaultMaxConcurrencyPerGroup(2).GlobalMaxInFlight(2))
		synctest.Wait()
		assert.EqualValues(t, 6, g.running.cur.Load(), "running tasks after the global cap fell to 2")
		assert.Equal(t, 2, e.Stats().GlobalMaxInFlight)

		// Running 5, 4, 3, 2: nothing starts; running 1: one starts.
		for i, id := range []string{"a0", "a1", "b0", "b1", "c0"} {
			g.release(id)
			want := max(5-i, 2)
			assert.EqualValues(t, want, g.running.cur.Load(), "running once %s ended", id)
		}
		assert.Len(t, g.starts.list(), 7, "tasks started in all")

		upUpdate(t, e, b().DefaultMaxConcurrencyPerGroup(2))
		synctest.Wait()
		// a2 a3 b2 b3 and two of c1 c2 c3: each group at its limit 2.
		assert.EqualValues(t, 6, g.running.cur.Load(), "running once the cap was lifted")
		assert.Equal(t, groupconc.Unlimited, e.Stats().GlobalMaxInFlight)
		g.finish(t, e)
	})
}

func TestUpdatePolicyLoweredGlobalCapStartsNothingUntilRunningIsBelowIt(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b().DefaultMaxConcurrencyPerGroup(2).GlobalMaxInFlight(12))
		g := upThreeGroupsOfFour(t, e)
		upUpdate(t, e, b().DefaultMaxConcurrencyPerGroup(2).GlobalMaxInFlight(2))
		g.release("a0")
		assert.EqualValues(t, 5, g.running.cur.Load(), "running once a0 ended under the new global cap 2; Stats %+v", e.Stats())
		g.finish(t, e)
	})
}

func TestUpdatePolicyLoweredQueueThresholdRejectsNoWaitingTaskButNewOnesWhileWaitingIsAtLeastIt(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b().DefaultQueueThresholdPerGroup(5))
		g := upNewGated()
		for i := range 5 {
			g.submit(t, e, "a", fmt.Sprint(i))
			synctest.Wait()
		}
		require.Equal(t, 4, groupStats(t, e, "a").Waiting)

		upUpdate(t, e, b().DefaultQueueThresholdPerGroup(2))
		synctest.Wait()
		for i := 1; i < 5; i++ {
			assert.False(t, g.hs[fmt.Sprint(i)].IsDone(), "waiting task %d ended when the threshold fell", i)
		}
		assert.Equal(t, 2, groupStats(t, e, "a").QueueThreshold)
		n := 0
		submitNew := func() *groupconc.TaskHandle[int] {
			n++
			return g.submit(t, e, "a", fmt.Sprint("new", n))
		}
		for waiting := 4; waiting >= 2; waiting-- {
			require.Equal(t, waiting, groupStats(t, e, "a").Waiting)
			requireRejected(t, submitNew(), "group")
			g.release(fmt.Sprint(4 - waiting)) // the running task ends; the next runs
		}
		require.Equal(t, 1, groupStats(t, e, "a").Waiting)
		h := submitNew()
		assert.False(t, h.IsDone(), "a task accepted with 1 waiting under threshold 2")
		requireRejected(t, submitNew(), "group")
		g.finish(t, e)
	})
}
