package groupconc_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// GroupStats of a parent adds up its subtree by walking it when that is
// smaller than what is active, and AllGroupStats by a pass over every
// active group. Both give the same counts and ages, with tasks running
// and waiting at every depth, a child evicted with its task still running,
// and either idle children (a pass is cheaper) or groups active elsewhere
// (the walk is).
func TestAParentsGroupStatsAgreesWithAllGroupStatsWhetherItWalksItsSubtreeOrNot(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, c := range []struct{ idle, elsewhere int }{{10, 0}, {0, 20}} {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(1).
					PerGroupMaxConcurrency(map[string]int{"a": 3}))
				hold := make(chan struct{})
				held := func(context.Context) (int, error) {
					<-hold
					return 0, nil
				}
				for i := range c.idle {
					quiesce(t, e, submit(t, t.Context(), e, fmt.Sprintf("a/i%d", i), "idle", succeed))
				}
				var hs []*groupconc.TaskHandle[int]
				for i, key := range []string{"a/b/c", "a/b/c", "a/b", "a/d", "a/d", "a/e/f", "x"} {
					hs = append(hs, submit(t, t.Context(), e, key, fmt.Sprint(i), held))
					time.Sleep(time.Second) // tasks of different ages, on the bubble's clock
				}
				for i := range c.elsewhere {
					hs = append(hs, submit(t, t.Context(), e, fmt.Sprintf("o%d/u", i), "o", held))
				}
				synctest.Wait()
				e.EvictGroup("a/e/f") // its task ignores its context and runs on
				synctest.Wait()
				all := allStats(e)
				for _, key := range []string{"a", "a/b", "a/e"} {
					st, ok := e.GroupStats(key)
					if assert.True(t, ok, key) {
						assert.Equal(t, all[key], st, key)
					}
				}
				assert.Equal(t, 3, all["a"].Running, "a/b/c, a/d and a/e/f, evicted, run")
				assert.Equal(t, 3, all["a"].Waiting, "a/b/c, a/b and a/d wait")
				assert.Positive(t, all["a"].OldestWait)
				assert.Positive(t, all["a"].OldestRunning)
				close(hold)
				quiesce(t, e, hs...)
			})
		}
	})
}
