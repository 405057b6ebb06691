package benchmarks

import (
	"runtime"
	"testing"

	"github.com/kobe/groupconc"
)

// BenchmarkW2FairShareCost measures what IsolationFairShare costs against
// IsolationOff on W2's limits (1 000 groups of limit 4 under a global limit
// of 64), all in one process: each iteration runs one round in each mode,
// and one more under IsolationOff (control), the order turning from one
// iteration to the next. It reports IsolationOff's CPU time per task and
// fair share's and the control's against it. W2Groups1000 and
// W2DeepBacklog give the first two from a process per mode, and so put
// into the ratio whatever the machine did meanwhile: on a shared 2-core
// machine their per-round ratios ranged from 0.6 to 2.4. Where in memory
// an executor's state lies moves its cost too, by up to a tenth: so each
// mode has executors of its own, made in shuffled order, and the rounds go
// round them; control, near 1 in a sound run, shows what is left.
//
//	shape     a round
//	batch     25 of W2's batches: 4 000 tasks round-robin, waited for
//	streamed  W2DeepBacklog's: 100 000 tasks, waited for at the end
//	gated     the same behind 64 tasks holding every global permit
//
// Each round starts after a collection, so that no mode pays for
// another's garbage.
func BenchmarkW2FairShareCost(b *testing.B) {
	const perMode = 4
	modes := []func(Config) (Runner, error){newGroupconc, newGroupconcFair, newGroupconc}
	for _, shape := range []string{"batch", "streamed", "gated"} {
		b.Run("shape="+shape, func(b *testing.B) {
			c := Config{PerGroup: w2PerGroup, Global: w2Global}
			keys := groupKeys(w2Groups)
			takeTurns(b, []string{"off", "fair", "control"}, perMode, deepW2, func(mode, _ int) func() {
				r, err := modes[mode](c)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(r.Close)
				e := r.(*groupconcPeer).e
				round := func() { fairShareRound(b, r, e, keys, shape) }
				round() // the groups exist before timing starts
				return round
			}, runtime.GC)
		})
	}
}

// fairShareRound runs one round of shape on r, whose executor is e: 100 000
// tasks either way.
func fairShareRound(b *testing.B, r Runner, e *groupconc.GroupExecutor, keys []string, shape string) {
	if shape != "batch" {
		w2Deep(b, r, e, keys, shape == "gated")
		return
	}
	for range deepW2 / w2Batch {
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
