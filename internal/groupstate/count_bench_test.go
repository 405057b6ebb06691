package groupstate

import (
	"sync/atomic"
	"testing"
)

// BenchmarkTally takes and gives back permits from every CPU at once, as
// the executor-wide counts are. Run it at -cpu 1 and 2; one CPU cannot
// show contention.
func BenchmarkTally(b *testing.B) {
	for _, limit := range []int64{Unlimited, 1 << 40} {
		name := "limit=unlimited"
		if limit != Unlimited {
			name = "limit=finite"
		}
		b.Run(name, func(b *testing.B) {
			var c tally
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if !c.take(limit) {
						b.Error("a take was refused under the limit")
						return
					}
					c.give()
				}
			})
		})
	}
}

// BenchmarkShardedCount counts tasks running in and out from every CPU at
// once, as the executor does: in shards (runCount), and in one word each.
// Each goroutine counts tasks of 64 records it made, as tasks made on its
// processor. Run it at -cpu 1 and 2; one CPU cannot show contention.
func BenchmarkShardedCount(b *testing.B) {
	b.Run("count=shards", func(b *testing.B) {
		gl := NewGlobal[tk](Unlimited, Unlimited, false)
		benchRecords(b, func(p *Permits[tk]) {
			gl.runningIn(p)
			gl.runningOut(p)
		})
	})
	b.Run("count=one-word", func(b *testing.B) {
		var in, out atomic.Int64
		benchRecords(b, func(*Permits[tk]) {
			in.Add(1)
			out.Add(1)
		})
	})
}

// benchRecords calls count b.N times over the parallel goroutines, each
// with records of its own on the heap.
func benchRecords(b *testing.B, count func(p *Permits[tk])) {
	b.RunParallel(func(pb *testing.PB) {
		ps := make([]*Permits[tk], 64)
		for i := range ps {
			ps[i] = new(Permits[tk])
		}
		for i := 0; pb.Next(); i++ {
			count(ps[i%len(ps)])
		}
	})
}
