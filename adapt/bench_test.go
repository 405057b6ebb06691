package adapt_test

import (
	"context"
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

// BenchmarkSubmitWait is one Submit and Wait at a time on one group of
// limit 4, adaptive or not: each task runs on a fresh goroutine, whose
// stack starts small, and a trivial task's must not have to grow for its
// sample (a growth costs about 1µs).
func BenchmarkSubmitWait(b *testing.B) {
	for _, v := range []struct {
		name string
		new  func(string, int, int) groupconc.AdaptiveLimit
	}{{"off", nil}, {"gradient", adapt.GradientConfig{}.New}, {"aimd", adapt.AIMDConfig{}.New}} {
		b.Run("adaptive="+v.name, func(b *testing.B) {
			pb := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(4)
			if v.new != nil {
				pb.AdaptiveConcurrency(groupconc.AdaptiveConfig{New: v.new})
			}
			p, err := pb.Build()
			if err != nil {
				b.Fatal(err)
			}
			e := groupconc.New(p)
			defer e.Close()
			ctx := context.Background()
			task := func(context.Context) (int, error) { return 1, nil }
			b.ReportAllocs()
			for b.Loop() {
				h, err := groupconc.Submit(ctx, e, "g", "t", task)
				if err != nil {
					b.Fatal(err)
				}
				h.Wait()
			}
		})
	}
}
