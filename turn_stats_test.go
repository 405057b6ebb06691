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
	fw := turnWaitOf(mode)
	ex, gates, hs := fw.start(t, nil, func(ex *groupconc.GroupExecutor, hs map[string]*groupconc.TaskHandle[int]) {
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
	})
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
