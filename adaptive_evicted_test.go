package groupconc_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A task of an evicted group still runs on the group's old limits, and its
// sample goes to the old group's algorithm. The key names the new group by
// then: a LimitChange of the old one would tell of a limit that no live
// group has (GroupStats shows the new group's), so none is told.
func TestAnEvictedGroupsSampleTellsNoLimitChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(script)
		var mu sync.Mutex
		var changes []groupconc.LimitChange
		e := groupconc.New(mustBuild(t, adaptiveGroups(s, 4, 1, 0).
			LimitChanges(func(c groupconc.LimitChange) { mu.Lock(); changes = append(changes, c); mu.Unlock() })))
		defer e.Close()
		gate := make(chan struct{})
		// It runs on past the eviction: it does not watch its context.
		old := submit(t, context.Background(), e, "g", "old", gated(gate, 0))
		synctest.Wait()
		e.EvictGroup("g")
		again := make(chan struct{})
		live := submit(t, context.Background(), e, "g", "live", gated(again, 0))
		synctest.Wait()

		s.want.Store(1)
		close(gate)
		old.Wait()
		synctest.Wait()
		assert.Equal(t, 4, groupStats(t, e, "g").MaxConcurrency, "the live group's limit")
		mu.Lock()
		assert.Empty(t, changes, "no change of the live group's limit")
		mu.Unlock()

		close(again)
		live.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, changes, 1, "the live group's own sample moves its limit, and is told")
		assert.Equal(t, groupconc.LimitChange{GroupKey: "g", Old: 4, New: 1, At: changes[0].At}, changes[0])
	})
}
