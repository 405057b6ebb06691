package groupconc_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Evicting a parent as its children are made leaves one parent for its
// key: later tasks meet its limit, and old and new tasks at most double it.
func TestEvictingAParentAsItsChildrenAreMadeKeepsOneParent(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for i := range 100 {
			e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().Isolation(mode).ParentSeparator("/").
				GlobalMaxInFlight(10).PerGroupMaxConcurrency(map[string]int{"t": 2}).DefaultMaxConcurrencyPerGroup(5)))
			gate := make(chan struct{})
			var g gauge
			var wg sync.WaitGroup
			var mu sync.Mutex
			var hs []*groupconc.TaskHandle[int]
			for j := range 4 {
				wg.Go(func() {
					k := fmt.Sprintf("t/%d/x", j%2)
					if j == 3 {
						e.EvictGroup("t")
						return
					}
					h, err := groupconc.SubmitWith(context.Background(), e, k, fmt.Sprint(i, j), gated(gate, 1, &g), groupconc.SubmitOptions{Cost: 1})
					if err == nil {
						mu.Lock()
						hs = append(hs, h)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			// After the race new tasks meet one tenant limit of 2.
			for j := range 4 {
				h, err := groupconc.SubmitWith(context.Background(), e, fmt.Sprintf("t/%d", j), fmt.Sprint("n", j), gated(gate, 1, &g), groupconc.SubmitOptions{})
				require.NoError(t, err)
				hs = append(hs, h)
			}
			for gs := range e.AllGroupStats() {
				if gs.Parent != "" {
					_, ok := e.GroupStats(gs.Parent)
					assert.True(t, ok, "%s's parent %s unknown", gs.GroupKey, gs.Parent)
				}
			}
			ts, _ := e.GroupStats("t")
			sum := 0
			for gs := range e.AllGroupStats() {
				if gs.Parent == "" && gs.GroupKey != "t" {
					t.Errorf("a top group %s", gs.GroupKey)
				}
				if gs.Parent == "t" {
					sum += gs.Running
				}
			}
			assert.LessOrEqual(t, ts.Running, 2, "t's limit")
			assert.Equal(t, ts.Running, sum, "t's Running against its children's")
			close(gate)
			for _, h := range hs {
				h.Wait()
			}
			assert.LessOrEqual(t, g.max.Load(), int64(4), "old and new tenants together")
			require.NoError(t, e.Close())
			churnCheckZero(t, e)
		}
	})
}
