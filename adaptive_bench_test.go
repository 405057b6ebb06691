package groupconc_test

import (
	"testing"

	"github.com/kobe/groupconc"
)

// steady is an AdaptiveLimit that keeps the limit where it is: what the
// executor's hook costs, without an algorithm's work.
type steady struct{}

func (steady) Observe(s groupconc.LimitSample) int { return s.Limit }

// BenchmarkSubmitWaitAdaptive is BenchmarkSubmitWaitLimited with adaptive
// limits off, and on with an algorithm that never moves them: the cost
// per task of taking each task's sample and offering it.
func BenchmarkSubmitWaitAdaptive(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "adaptive=off"
		if on {
			name = "adaptive=on"
		}
		b.Run(name, func(b *testing.B) {
			pb := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(4).DefaultMaxInFlightPerGroup(8).GlobalMaxInFlight(64)
			if on {
				pb.AdaptiveConcurrency(groupconc.AdaptiveConfig{New: func(string, int, int) groupconc.AdaptiveLimit { return steady{} }})
			}
			p, err := pb.Build()
			if err != nil {
				b.Fatal(err)
			}
			benchSubmitWait(b, groupconc.New(p))
		})
	}
}
