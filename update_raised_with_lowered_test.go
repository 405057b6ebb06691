package groupconc_test

import (
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
