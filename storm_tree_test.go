package groupconc_test

import (
	"testing"
	"time"

	"github.com/kobe/groupconc"
)

// treeStorm is the storm over two tenants, t and u, each running tasks of
// its own beside its users'. Tasks cost 0 to 5. A tenant's gauge counts
// its whole subtree's running tasks, which its limit bounds. u's subtree
// is evicted, so it is not gauged.
var treeStorm = stormShape{
	keys:    []string{"t", "t/a", "t/b", "u", "u/c", "u/d"},
	evicted: []string{"u", "u/c", "u/d"},
	gauged:  map[string][]string{"t": {"t"}, "t/a": {"t/a", "t"}, "t/b": {"t/b", "t"}},
	parents: true,
}

// The storm with groups of groups and costs: every API racing every other,
// limits, pauses and overrides of parents and children changed live,
// shutdown and eviction of whole subtrees.
func TestStormWithParentsAndCostsKeepsEveryPromise(t *testing.T) {
	d := 300 * time.Millisecond
	if *long {
		d = 20 * time.Second
	}
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) { storm(t, mode, d, treeStorm) })
}
