package groupconc_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A task submitted in a listener of a task that released can wait for its
// group's turn, in no line: the task handed the permit walks on only once
// the listener returns. These tests end that wait with Cancel or its ctx.

// TestATaskWaitingForItsGroupsTurnEndsAtOnceWhenCancelled: C ends CANCELLED
// inside the listener, with its events once. B, handed A's permit, runs.
// The group's counts go back to zero and its one permit is neither lost
// nor doubled.
func TestATaskWaitingForItsGroupsTurnEndsAtOnceWhenCancelled(t *testing.T) {
	for _, byCtx := range []bool{false, true} {
		name := map[bool]string{false: "Cancel", true: "ctx"}[byCtx]
		t.Run(name, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
				synctest.Test(t, func(t *testing.T) { turnCancelRun(t, mode, byCtx) })
			})
		})
	}
}

// turnWait sets up C of group g waiting for its group's turn. A ends,
// and hands B a permit of an earlier layer than C waits at. F ends in A's
// listener, and frees the permit C takes before that. Under IsolationOff
// the walk takes the global cap first, under IsolationFairShare last.
type turnWait struct {
	at      groupconc.WaitPosition // where C waits
	builder *groupconc.PolicyBuilder
	pre     [][2]string // group and ID of the tasks submitted first; A, F and B among them
}

func turnWaitOf(mode groupconc.IsolationMode) turnWait {
	b := groupconc.NewPolicyBuilder().Isolation(mode)
	if mode == groupconc.IsolationOff { // B waits for the global cap
		return turnWait{
			at:      groupconc.WaitPosition{Limit: "concurrency", Group: "g", Ahead: 1},
			builder: b.GlobalMaxInFlight(3).DefaultMaxConcurrencyPerGroup(1),
			pre:     [][2]string{{"x", "X"}, {"f", "F"}, {"g", "A"}, {"g", "B"}},
		}
	}
	return turnWait{ // B waits for g's concurrency
		at:      groupconc.WaitPosition{Limit: "global", Ahead: 1},
		builder: b.GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(2),
		pre:     [][2]string{{"g", "A"}, {"g", "F"}, {"g", "B"}},
	}
}

// start makes an executor of fw's policy, with rec, submits fw's tasks,
// each gated, and ends A. A's listener ends F and then calls inA, as C
// would wait for its group's turn. It returns the executor, the gates
// and the handles, which inA may add to.
func (fw turnWait) start(t *testing.T, rec groupconc.TaskLifecycleListener, inA func(ex *groupconc.GroupExecutor, hs map[string]*groupconc.TaskHandle[int])) (*groupconc.GroupExecutor, map[string]chan struct{}, map[string]*groupconc.TaskHandle[int]) {
	var ex *groupconc.GroupExecutor
	gates := map[string]chan struct{}{}
	hs := map[string]*groupconc.TaskHandle[int]{}
	l := groupconc.ListenerFuncs{
		Completed: func(_, id string, _ groupconc.GroupResult[any]) {
			if id != "A" {
				return
			}
			close(gates["F"])
			hs["F"].Wait() // F frees the permit C takes first
			inA(ex, hs)
		},
	}
	ex = groupconc.New(mustBuild(t, fw.builder.TaskLifecycleListener(groupconc.Listeners(rec, l))))
	for _, k := range fw.pre {
		gates[k[1]] = make(chan struct{})
		h, err := groupconc.SubmitWith(t.Context(), ex, k[0], k[1], gated(gates[k[1]], 1), groupconc.SubmitOptions{})
		require.NoError(t, err)
		hs[k[1]] = h
	}
	synctest.Wait()
	close(gates["A"]) // A ends: a permit goes to B, which walks on once A's listener returns
	return ex, gates, hs
}

func turnCancelRun(t *testing.T, mode groupconc.IsolationMode, byCtx bool) {
	rec := newRecorder()
	type seen struct {
		pos        groupconc.WaitPosition
		posOK      bool
		waiting    int
		doneAtOnce bool
		res        groupconc.GroupResult[int]
	}
	got := make(chan seen, 1)
	var cRan atomic.Bool
	fw := turnWaitOf(mode)
	ex, gates, hs := fw.start(t, rec, func(ex *groupconc.GroupExecutor, _ map[string]*groupconc.TaskHandle[int]) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c, err := groupconc.SubmitWith(ctx, ex, "g", "C", func(context.Context) (int, error) { cRan.Store(true); return 3, nil }, groupconc.SubmitOptions{})
		if !assert.NoError(t, err) {
			return
		}
		var s seen
		s.pos, s.posOK = c.Position()
		gs, _ := ex.GroupStats("g")
		s.waiting = gs.Waiting
		if byCtx {
			cancel()
			<-c.Done() // on old code, a deadlock: synctest panics
		} else {
			assert.True(t, c.Cancel())
		}
		s.doneAtOnce = c.IsDone()
		if s.doneAtOnce {
			s.res = c.Wait()
		}
		got <- s
	})
	s := <-got
	assert.GreaterOrEqual(t, s.waiting, 1, "C waits")
	assert.True(t, s.posOK, "C waits, so it has a position")
	assert.Equal(t, fw.at, s.pos, "B is ahead of C")
	require.True(t, s.doneAtOnce, "C ended within Cancel, or as its ctx ended")
	assert.Equal(t, groupconc.StatusCancelled, s.res.Status)
	assert.Equal(t, groupconc.StatusSuccess, hs["A"].Wait().Status)

	synctest.Wait()
	gs, _ := ex.GroupStats("g")
	assert.Equal(t, 1, gs.Running, "B runs")
	assert.Zero(t, gs.Waiting)
	close(gates["B"])
	assert.Equal(t, groupconc.StatusSuccess, hs["B"].Wait().Status, "B ran after the listener")
	assert.False(t, cRan.Load())
	assert.Equal(t, []string{evSubmitted, evCompleted}, rec.Events("g", "C"), "C's events, once each")
	if x := hs["X"]; x != nil {
		close(gates["X"])
		x.Wait()
	}

	// g's permits are there, once each: its tasks run to its limit.
	gs, _ = ex.GroupStats("g")
	limit := gs.MaxConcurrency
	gateD := make(chan struct{})
	var ds []*groupconc.TaskHandle[int]
	for i := range limit + 1 {
		d, err := groupconc.SubmitWith(t.Context(), ex, "g", "D"+strconv.Itoa(i), gated(gateD, 4), groupconc.SubmitOptions{})
		require.NoError(t, err)
		ds = append(ds, d)
	}
	synctest.Wait()
	gs, _ = ex.GroupStats("g")
	assert.Equal(t, limit, gs.Running)
	assert.Equal(t, 1, gs.Waiting)
	close(gateD)
	for _, d := range ds {
		assert.Equal(t, 4, d.Wait().Value)
	}
	synctest.Wait()
	st := ex.Stats()
	assert.Equal(t, uint64(1), st.Cancelled)
	assert.Equal(t, st.Submitted, st.Succeeded+st.Cancelled)
	assert.Zero(t, st.GlobalInFlight)
	gs, _ = ex.GroupStats("g")
	assert.Zero(t, gs.Running+gs.Waiting+gs.InFlight)
	assert.NoError(t, ex.Quiescent())
	require.NoError(t, ex.Shutdown(t.Context()))
}
