package adapt_test

import (
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
)

// BenchmarkObserve is the cost of one sample to an algorithm: what each
// task of an adaptive group pays on top of the executor's hook.
func BenchmarkObserve(b *testing.B) {
	for _, v := range []struct {
		name string
		l    groupconc.AdaptiveLimit
	}{
		{"gradient", adapt.NewGradient(1, 4, adapt.GradientConfig{})},
		{"aimd", adapt.NewAIMD(1, 4, adapt.AIMDConfig{})},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			s := groupconc.LimitSample{GroupKey: "g", Status: groupconc.StatusSuccess, RunTime: time.Microsecond, Running: 3, Limit: 4, End: time.Unix(0, 0)}
			for b.Loop() {
				s.End = s.End.Add(time.Microsecond)
				s.Limit = v.l.Observe(s)
			}
		})
	}
}
