package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A costly task at the head of its line is not passed by a cheaper one
// behind it, and each holds its cost.
func TestCostHeadOfLineIsNotOvertaken(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(4))
			a, b, c := newGatedTask(t, 1), newGatedTask(t, 2), newGatedTask(t, 3)
			ha := submitGated(t, e, "g", "", a, groupconc.SubmitOptions{Cost: 3})
			synctest.Wait()
			hb := submitGated(t, e, "g", "", b, groupconc.SubmitOptions{Cost: 2})
			hc := submitGated(t, e, "g", "", c, groupconc.SubmitOptions{})
			synctest.Wait()
			require.True(t, a.started.Load())
			requireWaiting(t, hb, b)
			requireWaiting(t, hc, c) // one permit is free, but b waits first
			st, _ := e.GroupStats("g")
			assert.Equal(t, 1, st.Running)
			assert.Equal(t, 3, st.RunningCost)
			assert.Equal(t, 2, st.Waiting)
			assert.Equal(t, 3, st.InFlight, "tasks, whatever their cost")
			a.Release()
			synctest.Wait()
			assert.True(t, b.started.Load() && c.started.Load(), "2+1 fit in 4")
			st, _ = e.GroupStats("g")
			assert.Equal(t, 2, st.Running)
			assert.Equal(t, 3, st.RunningCost)
			b.Release()
			c.Release()
			quiesce(t, e, ha, hb, hc)
		})
	})
}

// A cost above a limit takes the whole limit: the task runs alone, and a
// limit lowered below its cost never makes it wait forever.
func TestCostAboveLimitRunsAlone(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(2).GlobalMaxInFlight(3))
			big, small := newGatedTask(t, 1), newGatedTask(t, 2)
			hb := submitGated(t, e, "g", "", big, groupconc.SubmitOptions{Cost: 5})
			synctest.Wait()
			require.True(t, big.started.Load())
			st, _ := e.GroupStats("g")
			assert.Equal(t, 2, st.RunningCost, "the whole limit, not the cost")
			assert.Equal(t, 3, e.Stats().GlobalInFlight, "min(5, 3) at the global cap")
			hs := submitGated(t, e, "g", "", small, groupconc.SubmitOptions{})
			synctest.Wait()
			requireWaiting(t, hs, small)

			next := newGatedTask(t, 3)
			hn := submitGated(t, e, "g", "", next, groupconc.SubmitOptions{Cost: 5})
			p := mustBuild(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1).GlobalMaxInFlight(3))
			require.NoError(t, e.UpdatePolicy(p))
			big.Release()
			synctest.Wait()
			assert.True(t, small.started.Load())
			small.Release()
			synctest.Wait()
			assert.True(t, next.started.Load(), "a cost of 5 under a limit of 1 still runs")
			next.Release()
			quiesce(t, e, hb, hs, hn)
		})
	})
}

// The global cap counts permits: a cost-3 task leaves one of 4.
func TestCostAtTheGlobalCap(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(10).GlobalMaxInFlight(4))
			a, b, c := newGatedTask(t, 1), newGatedTask(t, 2), newGatedTask(t, 3)
			ha := submitGated(t, e, "a", "", a, groupconc.SubmitOptions{Cost: 3})
			synctest.Wait()
			hb := submitGated(t, e, "b", "", b, groupconc.SubmitOptions{Cost: 2})
			synctest.Wait()
			requireWaiting(t, hb, b)
			assert.Equal(t, 3, e.Stats().GlobalInFlight)
			hc := submitGated(t, e, "c", "", c, groupconc.SubmitOptions{})
			synctest.Wait()
			if mode == groupconc.IsolationOff {
				requireWaiting(t, hc, c) // first come, first served: b is first
			}
			a.Release()
			synctest.Wait()
			assert.True(t, b.started.Load() && c.started.Load())
			b.Release()
			c.Release()
			quiesce(t, e, ha, hb, hc)
		})
	})
}

// Under fair share a group of cost-4 tasks and a group of cost-1 tasks of
// equal weight hold equal permits.
func TestCostFairShareInPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().Isolation(groupconc.IsolationFairShare).DefaultMaxConcurrencyPerGroup(8).GlobalMaxInFlight(8))
		var ks []*gatedTask
		var hs []*groupconc.TaskHandle[int]
		add := func(key string, c int) *gatedTask {
			k := newGatedTask(t, c)
			ks = append(ks, k)
			hs = append(hs, submitGated(t, e, key, "", k, groupconc.SubmitOptions{Cost: c}))
			synctest.Wait()
			return k
		}
		a1, a2 := add("heavy", 4), add("heavy", 4)
		for range 8 {
			add("light", 1)
		}
		add("heavy", 4)
		add("heavy", 4)
		a1.Release()
		synctest.Wait()
		a2.Release()
		synctest.Wait()
		heavy, _ := e.GroupStats("heavy")
		light, _ := e.GroupStats("light")
		assert.Equal(t, 1, heavy.Running)
		assert.Equal(t, 4, light.Running)
		assert.Equal(t, 4, heavy.RunningCost)
		assert.Equal(t, 4, light.RunningCost)
		for _, k := range ks {
			k.Release()
		}
		quiesce(t, e, hs...)
	})
}

func TestCostNegativeIsRefused(t *testing.T) {
	e := newExecutor(t, builder())
	_, err := groupconc.SubmitWith(context.Background(), e, "g", "t", succeed, groupconc.SubmitOptions{Cost: -1})
	assert.ErrorIs(t, err, groupconc.ErrInvalidTask)
	assert.ErrorContains(t, err, "Cost")
	_, err = groupconc.Do(context.Background(), e, "g", succeed, groupconc.SubmitOptions{Cost: -2})
	assert.ErrorContains(t, err, "Cost")
}

// Do takes its cost too.
func TestCostDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(3))
		a := newGatedTask(t, 1)
		ha := submitGated(t, e, "g", "", a, groupconc.SubmitOptions{Cost: 2})
		synctest.Wait()
		done := make(chan int)
		go func() {
			v, _ := groupconc.Do(context.Background(), e, "g", succeed, groupconc.SubmitOptions{Cost: 2})
			done <- v
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("Do ran with 1 of 3 permits free, cost 2")
		default:
		}
		a.Release()
		assert.Equal(t, 1, <-done)
		quiesce(t, e, ha)
	})
}
