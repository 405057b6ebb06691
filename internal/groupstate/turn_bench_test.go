package groupstate

import (
	"context"
	"testing"
)

// BenchmarkTurnPark parks 1 000 tasks for their group's turn behind 1 000
// parked before them, then serves all. The shape new parks younger
// tasks, as a stream of new ones does. The shape old parks older ones,
// as a resumed group's tasks are. The shape urgent parks ones of a higher
// priority. Looked for from the back alone, an old or urgent task passed
// every task parked before it.
func BenchmarkTurnPark(b *testing.B) {
	for _, shape := range []string{"new", "old", "urgent"} {
		b.Run("shape="+shape, func(b *testing.B) { benchTurnPark(b, shape) })
	}
}

func benchTurnPark(b *testing.B, shape string) {
	const n = 1000
	limits := Limits{Concurrency: Unlimited, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1}
	r := NewRegistry(context.Background(), NewGlobal[tk](Unlimited, Unlimited, false), fixed(limits), func() int64 { return 0 })
	ks := make([]tk, 2*n+1)
	for b.Loop() {
		walker := &ks[2*n]
		r.Enter("g", &walker.p, walker, 0)
		walker.p.tryTurn()
		for i := range 2 * n {
			at := int64(1 + i)
			if shape == "old" {
				at = int64(1 + (i+n)%(2*n)) // the second n older than the first
			}
			k := &ks[i]
			r.Enter("g", &k.p, k, at)
			if shape == "urgent" && i >= n {
				k.p.SetPriority(PriorityDefault - 1)
			}
			k.p.waitTurn()
		}
		g, _ := r.Lookup("g")
		for w := g.passTurn(); w != nil; w = g.passTurn() {
		}
		for i := range ks {
			ks[i].p.Exit()
			ks[i] = tk{}
		}
	}
}
