package groupconc_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/kobe/groupconc"
)

func benchNoop(context.Context) (int, error) { return 1, nil }

func benchUnlimited(b *testing.B) *groupconc.GroupExecutor {
	b.Helper()
	p, err := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(groupconc.Unlimited).Build()
	if err != nil {
		b.Fatal(err)
	}
	return groupconc.New(p)
}

// BenchmarkRawGoroutine is the floor: a go statement and a WaitGroup per task.
func BenchmarkRawGoroutine(b *testing.B) {
	b.ReportAllocs()
	var wg sync.WaitGroup
	for b.Loop() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = benchNoop(context.Background())
		}()
		wg.Wait()
	}
}

// BenchmarkSubmitWait is one Submit and Wait at a time, on one group with no
// limit.
func BenchmarkSubmitWait(b *testing.B) {
	benchSubmitWait(b, benchUnlimited(b))
}

func benchSubmitWait(b *testing.B, e *groupconc.GroupExecutor) {
	defer e.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		h, err := groupconc.Submit(ctx, e, "g", "t", benchNoop)
		if err != nil {
			b.Fatal(err)
		}
		h.Wait()
	}
}

// BenchmarkSubmitWaitLimited is BenchmarkSubmitWait on a group of limit 4
// under a global cap of 64, so every layer has a limit to count against.
func BenchmarkSubmitWaitLimited(b *testing.B) {
	p, err := groupconc.NewPolicyBuilder().
		DefaultMaxConcurrencyPerGroup(4).
		DefaultMaxInFlightPerGroup(8).
		GlobalMaxInFlight(64).
		Build()
	if err != nil {
		b.Fatal(err)
	}
	benchSubmitWait(b, groupconc.New(p))
}

// BenchmarkSubmitWithWait is BenchmarkSubmitWait through each entry point,
// every task admitted at once: Submit, SubmitWith with the zero options,
// and SubmitWith with Block (which takes its own path through admission).
// Run it with -count and benchstat: the three stay within noise of each
// other, with the same allocations.
func BenchmarkSubmitWithWait(b *testing.B) {
	benchEntryPoints(b, benchUnlimited)
}

// BenchmarkSubmitWithWaitLimited is BenchmarkSubmitWithWait on a group of
// limit 4 under a global cap of 64, with queue thresholds of 64 at both
// levels, so that every layer and both queues are walked.
func BenchmarkSubmitWithWaitLimited(b *testing.B) {
	benchEntryPoints(b, func(b *testing.B) *groupconc.GroupExecutor {
		p, err := groupconc.NewPolicyBuilder().
			DefaultMaxConcurrencyPerGroup(4).
			DefaultMaxInFlightPerGroup(8).
			GlobalMaxInFlight(64).
			DefaultQueueThresholdPerGroup(64).
			GlobalQueueThreshold(64).
			Build()
		if err != nil {
			b.Fatal(err)
		}
		return groupconc.New(p)
	})
}

// BenchmarkSubmitWithBatch submits batches of 1 000 tasks to one group with
// no limit through each entry point, then waits for them: the cost of
// admission without a wait for each task in between.
func BenchmarkSubmitWithBatch(b *testing.B) {
	const batch = 1000
	handles := make([]*groupconc.TaskHandle[int], batch)
	forEachEntryPoint(b, benchUnlimited, batch, func(b *testing.B, submit entryPoint) {
		for b.Loop() {
			for i := range handles {
				handles[i] = submit()
			}
			for _, h := range handles {
				h.Wait()
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/task")
	})
}

// entryPoint submits one trivial task to group "g".
type entryPoint func() *groupconc.TaskHandle[int]

// forEachEntryPoint runs f as a sub-benchmark "call=NAME" for Submit,
// SubmitWith with the zero options and SubmitWith with Block, each on an
// executor of its own from newExec, and reports the process's CPU time
// per task, f running perOp tasks per b.Loop iteration.
func forEachEntryPoint(b *testing.B, newExec func(*testing.B) *groupconc.GroupExecutor, perOp int, f func(*testing.B, entryPoint)) {
	for _, c := range []struct {
		name string
		opts *groupconc.SubmitOptions // nil: Submit
	}{
		{"Submit", nil},
		{"SubmitWith", &groupconc.SubmitOptions{}},
		{"SubmitWith-Block", &groupconc.SubmitOptions{Block: true}},
	} {
		b.Run("call="+c.name, func(b *testing.B) {
			e := newExec(b)
			defer e.Close()
			ctx := context.Background()
			submit := func() *groupconc.TaskHandle[int] {
				var h *groupconc.TaskHandle[int]
				var err error
				if c.opts == nil {
					h, err = groupconc.Submit(ctx, e, "g", "t", benchNoop)
				} else {
					h, err = groupconc.SubmitWith(ctx, e, "g", "t", benchNoop, *c.opts)
				}
				if err != nil {
					b.Fatal(err)
				}
				return h
			}
			b.ReportAllocs()
			start := cpuTime()
			f(b, submit)
			// The process's CPU time, all threads: on a shared machine it
			// varies with the other work's load far less than wall time.
			b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N*perOp), "cpu-ns/task")
		})
	}
}

func benchEntryPoints(b *testing.B, newExec func(*testing.B) *groupconc.GroupExecutor) {
	forEachEntryPoint(b, newExec, 1, func(b *testing.B, submit entryPoint) {
		for b.Loop() {
			submit().Wait()
		}
	})
}

// BenchmarkSubmitWaitParallel submits from GOMAXPROCS goroutines at once,
// spread over 1 000 groups of limit 4 under a global cap of 64.
func BenchmarkSubmitWaitParallel(b *testing.B) {
	p, err := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(4).GlobalMaxInFlight(64).Build()
	if err != nil {
		b.Fatal(err)
	}
	e := groupconc.New(p)
	defer e.Close()
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "g" + strconv.Itoa(i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	start := cpuTime()
	defer func() {
		b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/task")
	}()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			h, err := groupconc.Submit(ctx, e, keys[i%len(keys)], "t", benchNoop)
			if err != nil {
				b.Error(err)
				return
			}
			h.Wait()
			i++
		}
	})
}

// BenchmarkExecuteAll1000 runs batches of 1 000 tasks over 10 groups of
// limit 4.
func BenchmarkExecuteAll1000(b *testing.B) {
	p, err := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(4).Build()
	if err != nil {
		b.Fatal(err)
	}
	e := groupconc.New(p)
	defer e.Close()
	tasks := make([]groupconc.GroupTask[int], 1000)
	for i := range tasks {
		tasks[i] = groupconc.GroupTask[int]{GroupKey: "g" + strconv.Itoa(i%10), TaskID: strconv.Itoa(i), Task: benchNoop}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := groupconc.ExecuteAll(ctx, e, tasks); err != nil {
			b.Fatal(err)
		}
	}
}
