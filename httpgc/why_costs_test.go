package httpgc_test

import (
	"strings"
	"testing"

	"github.com/kobe/groupconc"
)

// With costly tasks and more bulkheads, a leaf's reason names where its
// first task waits (whereFirst). Or it says "own limit", for a wait the
// counts cannot place.
func TestRowsWithCostsNameWhereTheirFirstTaskWaits(t *testing.T) {
	whereRun(t, 60, true)
}

// whereFirst reports whether why, the reason of leaf k, names where its
// first waiting task waits. That is ps[0], the oldest, as no task here
// has a priority. "own limit" is a wait the counts cannot place. Tasks
// waiting at a farther limit may hold a concurrency limit's permits. So
// may tasks waiting for the global cap, under fair share. The reason may
// name that limit. So it does for a costly task at a concurrency limit
// with too few permits free: its counts are the same.
func whereFirst(k, why string, ps []groupconc.WaitPosition, mode groupconc.IsolationMode) bool {
	p := ps[0]
	own := p.Group == k
	switch {
	case why == "own limit":
		return true
	case why == "global cap":
		return p.Limit == "global" || mode == groupconc.IsolationFairShare
	case why == "own limit: bulkhead", why == "own limit: concurrency":
		return own && why == "own limit: "+p.Limit
	case strings.HasPrefix(why, "parent limit: "):
		x := strings.TrimPrefix(why, "parent limit: ")
		return p.Group == x || p.Limit == "concurrency" && (own || strings.HasPrefix(p.Group, x+"/"))
	}
	return false
}
