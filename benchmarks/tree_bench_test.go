package benchmarks

import (
	"fmt"
	"testing"

	"github.com/kobe/groupconc"
)

// BenchmarkW2Tree is W2 for groupconc alone, in both isolation modes, with
// its 1 000 keys as users in 10 tenants ("t3/u123") and without. With
// parents every task takes its tenant's permit too, and fair share goes
// top-down. A tenant's limit is the global one, so the users' limits and
// the global cap bind as in W2.
func BenchmarkW2Tree(b *testing.B) {
	keys := make([]string, w2Groups)
	tenants := map[string]int{}
	for i := range keys {
		keys[i] = fmt.Sprintf("t%d/u%d", i%10, i)
		tenants[fmt.Sprint("t", i%10)] = w2Global
	}
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		for _, shape := range []string{"flat", "tree"} {
			b.Run(fmt.Sprintf("mode=%v/shape=%s", mode, shape), func(b *testing.B) {
				r, err := newGroupconcPeer(Config{PerGroup: w2PerGroup, Global: w2Global}, mode, nil, func(pb *groupconc.PolicyBuilder) {
					if shape == "tree" {
						pb.ParentSeparator("/").PerGroupMaxConcurrency(tenants)
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
