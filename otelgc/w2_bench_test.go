package otelgc_test

import (
	"context"
	"testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// BenchmarkW2 runs W2 of the benchmarks module (benchW2) with no listener
// (off), with a listener that does nothing (noop: what the executor itself
// spends on having a listener), and with the otelgc listener installed and
// observed by an SDK MeterProvider with a ManualReader (otelgc).
func BenchmarkW2(b *testing.B) {
	for _, listener := range []string{"off", "noop", "otelgc"} {
		b.Run("listener="+listener, func(b *testing.B) {
			pb := w2Policy()
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
