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
// Each task is a record of its own on the heap, made on the processor that
// counts it. Run it at -cpu 1 and 2; one CPU cannot show contention.
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

// benchRecords calls count with a new record on the heap, b.N times over
// the parallel goroutines.
func benchRecords(b *testing.B, count func(p *Permits[tk])) {
	type slot struct {
		p *Permits[tk]
		_ [56]byte
	}
	var next atomic.Int64
	kept := make([]slot, 1024) // each goroutine keeps its record in a slot: it escapes
	b.RunParallel(func(pb *testing.PB) {
		k := &kept[next.Add(1)%int64(len(kept))]
		for pb.Next() {
			k.p = new(Permits[tk])
			count(k.p)
		}
	})
}
