package groupstate

import (
	"context"
	"strconv"
	"sync"
	"testing"
)

// BenchmarkFairLine imitates W2 of the benchmarks module on the layers
// alone: one goroutine submits batches of 4 000 tasks round-robin over
// 1 000 groups of limit 4 under a global limit of 64; a task admitted at
// once gets a goroutine of its own, which releases it and carries on inline
// with the tasks handed a permit, as the executor does. Compare mode=fair
// with mode=off from one run.
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
	var done sync.WaitGroup
	var chain func(t *tk)
	chain = func(t *tk) {
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
					go chain(h)
				}
			}
			done.Done()
			t = next
		}
	}
	run := func() {
		done.Add(batch)
		for i := range tasks {
			t := &tasks[i]
			r.Enter(keys[i%groups], &t.p, t, 0)
			if out, _ := t.p.Try(); out == Admitted {
				go chain(t)
			}
		}
		done.Wait()
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
