package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// TestATaskWaitingForItsGroupsTurnShowsInItsGroupsStats: C waits for its
// group's turn, in no line, while A's listener runs (turnWaitOf). Its
// group's stats count it as waiting where its Position says it waits:
// in WaitingGlobal when that is the global cap. OldestWait covers it. On
// old code WaitingGlobal left it out, and OldestWait was 0 with two
// tasks waiting.
func TestATaskWaitingForItsGroupsTurnShowsInItsGroupsStats(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) { turnStatsRun(t, mode) })
	})
}

func turnStatsRun(t *testing.T, mode groupconc.IsolationMode) {
	const waited = 2 * time.Second
	type seen struct {
		pos   groupconc.WaitPosition
		stats groupconc.GroupStats
		all   groupconc.ExecutorStats
	}
	got := make(chan seen, 1)
	var ex *groupconc.GroupExecutor
	fw := turnWaitOf(mode)
	gates := map[string]chan struct{}{}
	hs := map[string]*groupconc.TaskHandle[int]{}
	l := groupconc.ListenerFuncs{
		Completed: func(_, id string, _ groupconc.GroupResult[any]) {
			if id != "A" {
				return
			}
			close(gates["F"])
			hs["F"].Wait() // F frees the permit C takes first
			c, err := groupconc.Submit(t.Context(), ex, "g", "C", func(context.Context) (int, error) { return 3, nil })
			if !assert.NoError(t, err) {
				return
			}
			hs["C"] = c
			time.Sleep(waited) // the fake clock: C waits this long
			var s seen
			s.pos, _ = c.Position()
			s.stats, _ = ex.GroupStats("g")
			s.all = ex.Stats()
			got <- s
		},
	}
	ex = groupconc.New(mustBuild(t, fw.builder.TaskLifecycleListener(l)))
	for _, k := range fw.pre {
		gates[k[1]] = make(chan struct{})
		h, err := groupconc.Submit(t.Context(), ex, k[0], k[1], gated(gates[k[1]], 1))
		require.NoError(t, err)
		hs[k[1]] = h
	}
	synctest.Wait()
	close(gates["A"])
	s := <-got
	require.Equal(t, fw.at, s.pos, "C waits for B's turn")
	assert.Equal(t, 2, s.stats.Waiting, "B and C")
	assert.Equal(t, 2, s.all.Waiting, "B and C")
	wantGlobal := 0
	if fw.at.Limit == "global" {
		wantGlobal = 1
	}
	assert.Equal(t, wantGlobal, s.stats.WaitingGlobal, "C waits before the %s limit", fw.at.Limit)
	assert.GreaterOrEqual(t, s.stats.OldestWait, waited, "C has waited")

	close(gates["B"])
	if x := gates["X"]; x != nil {
		close(x)
	}
	for id, h := range hs {
		assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, id)
	}
	synctest.Wait()
	gs, _ := ex.GroupStats("g")
	assert.Zero(t, gs.Waiting+gs.WaitingGlobal)
	assert.Zero(t, gs.OldestWait)
	st := ex.Stats()
	assert.Equal(t, st.Submitted, st.Succeeded)
	assert.NoError(t, ex.Quiescent())
	require.NoError(t, ex.Shutdown(t.Context()))
}
