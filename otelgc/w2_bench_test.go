package otelgc_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// The W2 workload of the root benchmarks: batches of 4 000 trivial tasks
// round-robin over 1 000 groups of concurrency 4, under a global cap of 64.
const (
	w2Groups   = 1000
	w2PerGroup = 4
	w2Global   = 64
	w2Batch    = 4 * w2Groups
)

// BenchmarkW2 runs W2 with no listener (off), with a listener that does
// nothing (noop: what the executor itself spends on having a listener), and
// with the otelgc listener installed and observed by an SDK MeterProvider
// with a ManualReader (otelgc).
func BenchmarkW2(b *testing.B) {
	for _, listener := range []string{"off", "noop", "otelgc"} {
		b.Run("listener="+listener, func(b *testing.B) {
			pb := groupconc.NewPolicyBuilder().
				DefaultMaxConcurrencyPerGroup(w2PerGroup).
				GlobalMaxInFlight(w2Global)
			var m *otelgc.Metrics
			switch listener {
			case "noop":
				pb.TaskLifecycleListener(groupconc.ListenerFuncs{})
			case "otelgc":
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				defer mp.Shutdown(context.Background())
				var err error
				if m, err = otelgc.New(otelgc.Options{MeterProvider: mp}); err != nil {
					b.Fatal(err)
				}
				pb.TaskLifecycleListener(m.Listener())
			}
			p, err := pb.Build()
			if err != nil {
				b.Fatal(err)
			}
			e := groupconc.New(p)
			defer e.Close()
			if m != nil {
				reg, err := m.Observe(e)
				if err != nil {
					b.Fatal(err)
				}
				defer reg.Unregister()
			}
			benchW2(b, e)
		})
	}
}

var noop groupconc.Task[struct{}] = func(context.Context) (struct{}, error) { return struct{}{}, nil }

// benchW2 reports the cost per task of submitting a batch and waiting for
// it. One batch runs untimed first, so that every group exists.
func benchW2(b *testing.B, e *groupconc.GroupExecutor) {
	keys := make([]string, w2Groups)
	for i := range keys {
		keys[i] = fmt.Sprint("g", i)
	}
	handles := make([]*groupconc.TaskHandle[struct{}], w2Batch)
	ctx := context.Background()
	run := func() {
		for i := range handles {
			h, err := groupconc.Submit(ctx, e, keys[i%w2Groups], "t", noop)
			if err != nil {
				b.Fatal(err)
			}
			handles[i] = h
		}
		for _, h := range handles {
			h.Wait()
		}
	}
	run()
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	batches := 0
	for b.Loop() {
		run()
		batches++
	}
	runtime.ReadMemStats(&after)
	tasks := float64(batches * w2Batch)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/tasks, "ns/task")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/tasks, "allocs/task")
}
