package groupstate

import (
	"fmt"
	"testing"
)

// BenchmarkTally takes and gives back permits from every CPU at once, as
// the executor-wide counts are. A narrow count is one word, each take a
// compare-and-swap. A wide one is two sums, and under an Unlimited limit a
// take is an add. Run it at -cpu 1 and 2; one CPU cannot show contention.
func BenchmarkTally(b *testing.B) {
	for _, wide := range []bool{false, true} {
		for _, limit := range []int64{Unlimited, 1 << 40} {
			name := "limit=unlimited"
			if limit != Unlimited {
				name = "limit=finite"
			}
			b.Run(fmt.Sprintf("wide=%v/%s", wide, name), func(b *testing.B) {
				var c tally
				if wide {
					c.widen()
				}
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
}
