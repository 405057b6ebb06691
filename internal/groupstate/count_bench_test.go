package groupstate

import "testing"

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
