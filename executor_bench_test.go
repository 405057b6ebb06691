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
