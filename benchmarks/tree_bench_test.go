package benchmarks

import (
	"fmt"
	"runtime"
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
//
// The shapes take turns in one process (takeTurns), each on executors of
// its own, a round being 10 of W2's batches: it reports flat's CPU time
// per task, and each other shape's against it. Control is flat again,
// near 1 in a sound run. Run in a process per shape, the ratio moved by
// a few tenths from run to run on a shared 2-core machine.
func BenchmarkW2Tree(b *testing.B) {
	const perShape, batches = 3, 10
	shapes := []string{"flat", "tree", "tree-unlimited", "control"}
	keys := make([]string, w2Groups)
	tenants := map[string]map[string]int{"tree": {}, "tree-unlimited": {}}
	for i := range keys {
		keys[i] = fmt.Sprintf("t%d/u%d", i%10, i)
		tenants["tree"][fmt.Sprint("t", i%10)] = w2Global
		tenants["tree-unlimited"][fmt.Sprint("t", i%10)] = groupconc.Unlimited
	}
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		b.Run(fmt.Sprintf("mode=%v", mode), func(b *testing.B) {
			takeTurns(b, shapes, perShape, batches*w2Batch, func(shape, _ int) func() {
				r, err := newGroupconcPeer(Config{PerGroup: w2PerGroup, Global: w2Global}, mode, nil, func(pb *groupconc.PolicyBuilder) {
					if ts := tenants[shapes[shape]]; ts != nil {
						pb.ParentSeparator("/").PerGroupMaxConcurrency(ts)
					}
				})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(r.Close)
				round := func() {
					for range batches {
						for i := range w2Batch {
							if err := r.Go(keys[i%len(keys)], noop); err != nil {
								b.Fatal(err)
							}
						}
						if err := r.Wait(); err != nil {
							b.Fatal(err)
						}
					}
				}
				round() // the groups exist before timing starts
				return round
			}, runtime.GC)
		})
	}
}
