package promgc_test

import (
	"testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkW2 runs W2 of the benchmarks module (benchW2) with no listener
// (off), with a listener that does nothing (noop: what the executor itself
// spends on having a listener), and with the promgc listener installed and
// its collector registered (promgc).
func BenchmarkW2(b *testing.B) {
	for _, listener := range []string{"off", "noop", "promgc"} {
		b.Run("listener="+listener, func(b *testing.B) {
			pb := w2Policy()
			var m *promgc.Metrics
			switch listener {
			case "noop":
				pb.TaskLifecycleListener(groupconc.ListenerFuncs{})
			case "promgc":
				var err error
				if m, err = promgc.New(promgc.Options{}); err != nil {
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
				prometheus.NewRegistry().MustRegister(m.Collector(e))
			}
			benchW2(b, e)
		})
	}
}
