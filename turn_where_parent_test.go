package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// TestATaskWaitingForItsTurnNamesTheLimitPastItsWalkersParentLayer: A
// and A2 hold a limit, and B of group t/u waits there. A ends and hands
// B that permit. B walks on once A's listener returns. In that listener
// A2 ends, and C of t/u is submitted: it takes the permit A2 freed, which
// B needs no more, and waits for B's turn before the next limit. Its
// Position names that limit, with B ahead. Then B and C run. The limit B
// was handed is u's, and C waits before t's; or it is t's, and C waits
// before u's next limit or the global cap. Where u's limit has room for
// both, C takes it beside B, and waits before t's, which t's other
// children share.
func TestATaskWaitingForItsTurnNamesTheLimitPastItsWalkersParentLayer(t *testing.T) {
	for _, c := range []struct {
		name  string
		limit func(*groupconc.PolicyBuilder) *groupconc.PolicyBuilder
		a     string // A's group
		want  groupconc.WaitPosition
	}{
		{"u's concurrency, then t's", func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
			return b.PerGroupMaxConcurrency(map[string]int{"t/u": 2, "t": 4})
		}, "t/u", groupconc.WaitPosition{Limit: "concurrency", Group: "t", Ahead: 1}},
		{"u's bulkhead, then t's", func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
			return b.DefaultMaxConcurrencyPerGroup(4).PerGroupMaxInFlight(map[string]int{"t/u": 2, "t": 4})
		}, "t/u", groupconc.WaitPosition{Limit: "bulkhead", Group: "t", Ahead: 1}},
		{"t's bulkhead, then u's concurrency", func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
			return b.DefaultMaxConcurrencyPerGroup(4).PerGroupMaxConcurrency(map[string]int{"t/u": 1}).PerGroupMaxInFlight(map[string]int{"t": 2})
		}, "t/v", groupconc.WaitPosition{Limit: "concurrency", Group: "t/u", Ahead: 1}},
		{"t's bulkhead, then u's concurrency beside B, then t's", func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
			return b.DefaultMaxConcurrencyPerGroup(4).PerGroupMaxInFlight(map[string]int{"t": 2})
		}, "t/v", groupconc.WaitPosition{Limit: "concurrency", Group: "t", Ahead: 1}},
		{"t's concurrency, then the global cap", func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
			return b.DefaultMaxConcurrencyPerGroup(4).PerGroupMaxConcurrency(map[string]int{"t": 2})
		}, "t/v", groupconc.WaitPosition{Limit: "global", Ahead: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			modes := []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare}
			if c.want.Limit == "global" { // under IsolationOff the global cap comes first
				modes = modes[1:]
			}
			for _, mode := range modes {
				t.Run(mode.String(), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						turnWhereParentRun(t, c.limit(groupconc.NewPolicyBuilder().Isolation(mode)), c.a, c.want)
					})
				})
			}
		})
	}
}

func turnWhereParentRun(t *testing.T, b *groupconc.PolicyBuilder, aGroup string, want groupconc.WaitPosition) {
	type seen struct {
		pos   groupconc.WaitPosition
		ok    bool
		stats groupconc.GroupStats
	}
	got := make(chan seen, 1)
	var ex *groupconc.GroupExecutor
	gates := map[string]chan struct{}{"A": make(chan struct{}), "A2": make(chan struct{}), "B": make(chan struct{})}
	hs := map[string]*groupconc.TaskHandle[int]{}
	l := groupconc.ListenerFuncs{
		Completed: func(_, id string, _ groupconc.GroupResult[any]) {
			if id != "A" {
				return
			}
			close(gates["A2"])
			hs["A2"].Wait() // A2 frees u's permit
			c, err := groupconc.Submit(t.Context(), ex, "t/u", "C", func(context.Context) (int, error) { return 3, nil })
			if !assert.NoError(t, err) {
				return
			}
			hs["C"] = c
			var s seen
			s.pos, s.ok = c.Position()
			s.stats, _ = ex.GroupStats("t/u")
			got <- s
		},
	}
	ex = groupconc.New(mustBuild(t, b.ParentSeparator("/").GlobalMaxInFlight(8).TaskLifecycleListener(l)))
	for _, id := range []string{"A", "A2", "B"} {
		g := "t/u"
		if id == "A" {
			g = aGroup
		}
		h, err := groupconc.Submit(t.Context(), ex, g, id, gated(gates[id], 1))
		require.NoError(t, err)
		hs[id] = h
	}
	synctest.Wait()
	close(gates["A"])
	s := <-got
	assert.True(t, s.ok, "C waits for its turn, so it has a position")
	assert.Equal(t, want, s.pos)
	assert.Equal(t, 2, s.stats.Waiting, "B and C wait")
	close(gates["B"])
	for _, id := range []string{"A", "A2", "B", "C"} {
		assert.Equal(t, groupconc.StatusSuccess, hs[id].Wait().Status, id)
	}
	synctest.Wait()
	assert.NoError(t, ex.Quiescent())
	require.NoError(t, ex.Shutdown(t.Context()))
}
