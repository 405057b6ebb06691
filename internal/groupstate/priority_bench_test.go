package groupstate

import (
	"context"
	"testing"
	"unsafe"
)

// wideTask is a task of the executor's size class, 144 bytes: its Permits,
// then the rest of a handle, which running the task reads and writes.
type wideTask struct {
	p    Permits[wideTask]
	rest [144 - unsafe.Sizeof(Permits[tk]{})]byte
}

// BenchmarkPriorityTurns imitates W3HotGroupPriorities of the benchmarks
// module on one group's line. A batch of 100 000 tasks joins a group of
// limit 1, then each task that ends hands the permit to the next. The
// shape one has every task at the default priority. The shape turn gives
// them the five priorities in turn, so the line serves them far from the
// order they were allocated in. A prefetch of the next two waiters, for
// that shape, did not pay here and was removed (benchmarks/RESULTS.md).
func BenchmarkPriorityTurns(b *testing.B) {
	for _, shape := range []string{"one", "turn"} {
		b.Run("shape="+shape, func(b *testing.B) { benchPriorityTurns(b, shape == "turn") })
	}
}

func benchPriorityTurns(b *testing.B, turn bool) {
	const batch = 100_000
	gl := NewGlobal[wideTask](Unlimited, Unlimited, false)
	limits := Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1}
	r := NewRegistry(context.Background(), gl, fixed(limits), func() int64 { return 0 })
	var sink byte
	run := func() {
		var first *wideTask
		for i := range batch {
			t := new(wideTask)
			if turn {
				t.p.SetPriority(uint8(i % NumPriorities))
			}
			r.Enter("g", &t.p, t, 0)
			if out, _ := t.p.Try(); out == Admitted {
				first = t
			}
		}
		for t := first; t != nil; {
			sink += t.rest[len(t.rest)/2] // the task runs: it reads its handle
			t.rest[len(t.rest)-1] = sink  // and completes it
			t.p.Release()
			t.p.Exit()
			next := t.p.Handed()
			if next != nil {
				if out, _, turn, _ := next.p.Resume(); out != Admitted || turn != nil {
					b.Fatalf("a handed task was not admitted alone: %v", out)
				}
			}
			t = next
		}
	}
	run()
	b.ReportAllocs()
	n, start := 0, cpuTime()
	for b.Loop() {
		run()
		n += batch
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/task")
	// The process's CPU time, all threads: on a shared machine it varies
	// with the other work's load far less than wall time.
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(n), "cpu-ns/task")
}
