package groupstate

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
)

// BenchmarkFairLine imitates W2 of the benchmarks module on the layers
// alone: one goroutine submits batches of 4 000 tasks round-robin over
// 1 000 groups of limit 4 under a global limit of 64, and GOMAXPROCS
// workers release them, carrying on inline with the tasks handed a permit,
// as the executor does. Compare mode=fair with mode=off from one run.
func BenchmarkFairLine(b *testing.B) {
	for _, mode := range []string{"off", "fair"} {
		b.Run("mode="+mode, func(b *testing.B) { benchLayers(b, mode == "fair") })
	}
}

func benchLayers(b *testing.B, fair bool) {
	const groups, perGroup, global, batch = 1000, 4, 64, 4000
	gl := NewGlobal[tk](global, Unlimited, fair)
	limits := Limits{Concurrency: perGroup, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1}
	r := NewRegistry(context.Background(), gl, fixed(limits), func() int64 { return 0 })
	keys := make([]string, groups)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	tasks := make([]tk, batch)
	ready := make(chan *tk, batch)
	var done sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		go func() {
			for t := range ready {
				for t != nil {
					t.p.Release()
					t.p.Exit()
					var next *tk
					for h := t.p.Handed(); h != nil; h = t.p.Handed() {
						if out, _ := h.p.Resume(); out != Admitted {
							continue
						}
						if next == nil {
							next = h
						} else {
							ready <- h
						}
					}
					done.Done()
					t = next
				}
			}
		}()
	}
	defer close(ready)
	run := func() {
		done.Add(batch)
		for i := range tasks {
			t := &tasks[i]
			r.Enter(keys[i%groups], &t.p, t, 0)
			if out, _ := t.p.Try(); out == Admitted {
				ready <- t
			}
		}
		done.Wait()
	}
	run()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		run()
		n += batch
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/task")
}
