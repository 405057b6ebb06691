package groupconc

import (
	"time"

	"github.com/kobe/groupconc/internal/groupstate"
)

// subtreeStats returns the snapshot of g, a parent, whose descendants,
// and those evicted while busy, are within. It adds up their counts as
// subtreesOf does for every active group, and reads when their running
// tasks started only if one of them, or g, has a task running.
func (e *GroupExecutor) subtreeStats(g *groupstate.Group[task], within []*groupstate.Group[task]) GroupStats {
	now := e.clock()
	seen := make(map[*groupstate.Group[task]]bool, len(within)+1)
	seen[g] = true
	var t subtree
	runs := false
	for _, d := range within {
		if seen[d] {
			continue // evicted as the walk ran: found twice
		}
		seen[d] = true
		x := ownSubtree(d, now, nil)
		t.add(x)
		runs = runs || x.running > 0
	}
	if running, _, _ := g.Counts(); running > 0 {
		runs = true
	}
	oldest := map[*groupstate.Group[task]]int64{}
	if runs {
		oldest = e.oldestRunning(seen)
		for d, start := range oldest {
			if d != g {
				t.oldestRunning = max(t.oldestRunning, time.Duration(now-start))
			}
		}
	}
	sub := subtrees{made: true, by: map[*groupstate.Group[task]]*subtree{g: &t}}
	return e.groupStats(g, oldest, &sub)
}
