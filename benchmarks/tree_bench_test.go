package benchmarks

import (
	"fmt"
	"testing"

	"github.com/kobe/groupconc"
)

// BenchmarkW2Tree is W2 for groupconc alone, in both isolation modes, with
// its 1 000 keys as users in 10 tenants ("t3/u123") and without. With
// parents every task takes its tenant's permit too, and fair share goes
// top-down. In shape tree a tenant's limit is the global one, so the
// users' limits and the global cap bind as in W2; a tenant's tasks then
// hold its permits while they wait for a global one. In shape
// tree-unlimited a tenant has no limit of its own (a parent's limit
// otherwise resolves to W2's per-group one, as any group's does).
func BenchmarkW2Tree(b *testing.B) {
	keys := make([]string, w2Groups)
	tenants := map[string]map[string]int{"tree": {}, "tree-unlimited": {}}
	for i := range keys {
		keys[i] = fmt.Sprintf("t%d/u%d", i%10, i)
		tenants["tree"][fmt.Sprint("t", i%10)] = w2Global
		tenants["tree-unlimited"][fmt.Sprint("t", i%10)] = groupconc.Unlimited
	}
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		for _, shape := range []string{"flat", "tree", "tree-unlimited"} {
			b.Run(fmt.Sprintf("mode=%v/shape=%s", mode, shape), func(b *testing.B) {
				r, err := newGroupconcPeer(Config{PerGroup: w2PerGroup, Global: w2Global}, mode, nil, func(pb *groupconc.PolicyBuilder) {
					if shape != "flat" {
						pb.ParentSeparator("/").PerGroupMaxConcurrency(tenants[shape])
					}
				})
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				benchThroughput(b, r, keys, w2Batch)
			})
		}
	}
}
