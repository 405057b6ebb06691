package groupstate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// BenchmarkFairLine imitates W2 of the benchmarks module on the layers
// alone: one goroutine submits batches of 4 000 tasks round-robin over
// 1 000 groups of limit 4 under a global limit of 64; a task admitted at
// once gets a goroutine of its own, which releases it and carries on inline
// with the tasks handed a permit, as the executor does. With shape=tree
// the groups are the users of 10 tenants, each of limit 64, as in
// BenchmarkW2Tree of the benchmarks module: a tenant's own line and the
// global line choose among those with work (shares.go, kidQueue). Compare
// mode=fair with mode=off, and tree with flat, from one run.
func BenchmarkFairLine(b *testing.B) {
	for _, mode := range []string{"off", "fair"} {
		for _, shape := range []string{"flat", "tree"} {
			b.Run("mode="+mode+"/shape="+shape, func(b *testing.B) { benchLayers(b, mode == "fair", shape == "tree") })
		}
	}
}

// xtk is a task with room for its Ext, as the executor's tasks of a group
// with a parent have.
type xtk struct {
	p Permits[xtk]
	x Ext
}

func benchLayers(b *testing.B, fair, tree bool) {
	const groups, perGroup, global, batch = 1000, 4, 64, 4000
	gl := NewGlobal[xtk](global, Unlimited, fair)
	gl.SetExt(func(t *xtk) *Ext { return &t.x })
	limits := Limits{Concurrency: perGroup, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1}
	tenant := limits
	tenant.Concurrency = global
	r := NewRegistry(context.Background(), gl, func(key string) Limits {
		if tree && !strings.Contains(key, "/") {
			return tenant
		}
		return limits
	}, func() int64 { return 0 })
	r.SetParents(slashParents, nil)
	keys := make([]string, groups)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
		if tree {
			keys[i] = fmt.Sprintf("t%d/u%d", i%10, i)
		}
	}
	tasks := make([]xtk, batch)
	var done sync.WaitGroup
	var chain func(t *xtk)
	chain = func(t *xtk) {
		for t != nil {
			t.p.Release()
			t.p.Exit()
			var next *xtk
			for h := t.p.Handed(); h != nil; {
				out, _, turn, _ := h.p.Resume()
				switch {
				case out != Admitted:
				case next == nil:
					next = h
				default:
					go chain(h)
				}
				if h = turn; h == nil {
					h = t.p.Handed()
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
			t.x = Ext{}
			r.Enter(keys[i%groups], &t.p, t, 0)
			if t.p.NeedsExt(1) {
				t.p.Extend(&t.x, 1)
			}
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
