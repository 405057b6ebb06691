package groupconc_test

import (
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// TestLoweredBulkheadHoldsWhenConcurrencyIsRaisedTogether: concurrency 1,
// bulkhead 3, one task running and two waiting for concurrency with their
// bulkhead permits. UpdatePolicy to concurrency 2 and bulkhead 1: the group
// runs one task, its bulkhead is full, so no waiting task may start.
func TestLoweredBulkheadHoldsWhenConcurrencyIsRaisedTogether(t *testing.T) {
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := mustBuild(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1).DefaultMaxInFlightPerGroup(3))
				e := groupconc.New(p)
				defer e.Close()
				gate := make(chan struct{})
				var running gauge
				hs := []*groupconc.TaskHandle[int]{
					submit(t, t.Context(), e, "a", "1", gated(gate, 1, &running)),
					submit(t, t.Context(), e, "a", "2", gated(gate, 2, &running)),
					submit(t, t.Context(), e, "a", "3", gated(gate, 3, &running)),
				}
				synctest.Wait()
				require.EqualValues(t, 1, running.cur.Load())
				require.NoError(t, e.UpdatePolicy(mustBuild(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(2).DefaultMaxInFlightPerGroup(1))))
				synctest.Wait()
				gs, _ := e.GroupStats("a")
				assert.EqualValues(t, 1, running.cur.Load(), "tasks running under bulkhead 1 (stats %+v)", gs)
				close(gate)
				for _, h := range hs {
					h.Wait()
				}
				assert.EqualValues(t, 1, running.max.Load(), "most tasks running at once")
			})
		})
	}
}

// TestLoweredBulkheadHoldsWhenARunningTaskEnds: concurrency 2, bulkhead 3,
// two tasks running and one waiting for concurrency. UpdatePolicy to
// bulkhead 1; when one running task ends, one still runs, so the waiting
// task may not start.
func TestLoweredBulkheadHoldsWhenARunningTaskEnds(t *testing.T) {
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := mustBuild(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(2).DefaultMaxInFlightPerGroup(3))
				e := groupconc.New(p)
				defer e.Close()
				first, rest := make(chan struct{}), make(chan struct{})
				var running gauge
				h1 := submit(t, t.Context(), e, "a", "1", gated(first, 1, &running))
				h2 := submit(t, t.Context(), e, "a", "2", gated(rest, 2, &running))
				h3 := submit(t, t.Context(), e, "a", "3", gated(rest, 3, &running))
				synctest.Wait()
				require.EqualValues(t, 2, running.cur.Load())
				require.NoError(t, e.UpdatePolicy(mustBuild(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(2).DefaultMaxInFlightPerGroup(1))))
				close(first)
				h1.Wait()
				synctest.Wait()
				gs, _ := e.GroupStats("a")
				assert.EqualValues(t, 1, running.cur.Load(), "tasks running under bulkhead 1 (stats %+v)", gs)
				close(rest)
				h2.Wait()
				h3.Wait()
			})
		})
	}
}

// TestLoweredConcurrencyHoldsWhenTheGlobalCapIsRaisedTogether: fair share,
// global cap 1, concurrency 2; a task of "a" runs, two of "b" hold b's
// concurrency permits and wait for a global one. UpdatePolicy to an
// Unlimited global cap and concurrency 1: "b" may run one task, not two.
func TestLoweredConcurrencyHoldsWhenTheGlobalCapIsRaisedTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mode := groupconc.IsolationFairShare
		p := mustBuild(t, builder().Isolation(mode).GlobalMaxInFlight(1).DefaultMaxConcurrencyPerGroup(2))
		e := groupconc.New(p)
		defer e.Close()
		gate := make(chan struct{})
		var runningB gauge
		hs := []*groupconc.TaskHandle[int]{
			submit(t, t.Context(), e, "a", "1", gated(gate, 1)),
			submit(t, t.Context(), e, "b", "1", gated(gate, 1, &runningB)),
			submit(t, t.Context(), e, "b", "2", gated(gate, 2, &runningB)),
		}
		synctest.Wait()
		require.EqualValues(t, 0, runningB.cur.Load())
		require.NoError(t, e.UpdatePolicy(mustBuild(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1))))
		synctest.Wait()
		gs, _ := e.GroupStats("b")
		assert.EqualValues(t, 1, runningB.cur.Load(), "tasks of b running under concurrency 1 (stats %+v)", gs)
		close(gate)
		for _, h := range hs {
			h.Wait()
		}
		assert.EqualValues(t, 1, runningB.max.Load(), "most tasks of b running at once")
	})
}

// TestLoweredBulkheadSendsBackTasksWaitingForTheGlobalCap: fair share,
// global cap 3, concurrency 1, bulkhead 3; one task of "a" runs, two wait
// for concurrency holding bulkhead permits. UpdatePolicy to global cap 1,
// concurrency 3, bulkhead 1: the two waiting tasks hold an over-limit
// bulkhead permit, so they go back to its line: InFlight is 1.
func TestLoweredBulkheadSendsBackTasksWaitingForTheGlobalCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mode := groupconc.IsolationFairShare
		p := mustBuild(t, builder().Isolation(mode).GlobalMaxInFlight(3).DefaultMaxConcurrencyPerGroup(1).DefaultMaxInFlightPerGroup(3))
		e := groupconc.New(p)
		defer e.Close()
		gate := make(chan struct{})
		hs := []*groupconc.TaskHandle[int]{
			submit(t, t.Context(), e, "a", "1", gated(gate, 1)),
			submit(t, t.Context(), e, "a", "2", gated(gate, 2)),
			submit(t, t.Context(), e, "a", "3", gated(gate, 3)),
		}
		synctest.Wait()
		require.NoError(t, e.UpdatePolicy(mustBuild(t, builder().Isolation(mode).GlobalMaxInFlight(1).DefaultMaxConcurrencyPerGroup(3).DefaultMaxInFlightPerGroup(1))))
		synctest.Wait()
		gs, _ := e.GroupStats("a")
		assert.Equal(t, 1, gs.InFlight, "InFlight under bulkhead 1 with one task running (stats %+v)", gs)
		close(gate)
		for _, h := range hs {
			h.Wait()
		}
	})
}

// A change that raises one limit and lowers another lets no task start
// under a mix of the two, which neither the old policy nor the new one
// allows. Here the global cap goes from 1 to 3 while the group's limit goes
// from 3 to 1: at most one task of the group runs before, during and after
// the change. The costly task that held the global permit ends while the
// change resolves the group's limit (in the resolver). Its release hands
// on the global permits the cap has free then: under the raised cap and
// the group's limit not yet lowered, three tasks started at once.
func TestAChangeRaisingOneLimitAndLoweringAnotherStartsNoTaskUnderTheMix(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).GlobalMaxInFlight(1).DefaultMaxConcurrencyPerGroup(3))
			first := newGatedTask(t, 0)
			hf := submitGated(t, e, "g", "", first, groupconc.SubmitOptions{Cost: 2})
			ws := []*gatedTask{newGatedTask(t, 1), newGatedTask(t, 2), newGatedTask(t, 3)}
			hs := []*groupconc.TaskHandle[int]{hf}
			for _, w := range ws {
				hs = append(hs, submitGated(t, e, "g", "", w, groupconc.SubmitOptions{}))
			}
			synctest.Wait()
			var once sync.Once
			p := mustBuild(t, builder().Isolation(mode).GlobalMaxInFlight(3).ConcurrencyResolver(func(string) int {
				once.Do(func() {
					first.Release()
					synctest.Wait() // its release hands the global permits on
				})
				return 1
			}))
			assert.NoError(t, e.UpdatePolicy(p))
			synctest.Wait()
			assert.Equal(t, 1, startedOf(ws), "tasks started over the group's new limit")
			assert.LessOrEqual(t, groupStats(t, e, "g").Running, 1)
			for _, w := range ws {
				w.Release()
			}
			quiesce(t, e, hs...)
		})
	})
}

// startedOf counts the gated tasks that started.
func startedOf(ks []*gatedTask) int {
	n := 0
	for _, k := range ks {
		if k.started.Load() {
			n++
		}
	}
	return n
}
