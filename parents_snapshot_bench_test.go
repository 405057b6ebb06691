package groupconc_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kobe/groupconc"
)

// BenchmarkActiveGroupStatsIdleUsers takes an ActiveGroupStats pass with
// keys three deep (tenant/user/session): 100 000 users remembered, each
// with an idle session, and 10 sessions running. A pass costs the 10 and
// their ancestors, not the users remembered.
func BenchmarkActiveGroupStatsIdleUsers(b *testing.B) {
	const users, busy = 100_000, 10
	p, err := groupconc.NewPolicyBuilder().ParentSeparator("/").Build()
	if err != nil {
		b.Fatal(err)
	}
	e := groupconc.New(p)
	b.Cleanup(func() { _ = e.Close() })
	ctx := context.Background()
	for i := range users {
		h, err := groupconc.Submit(ctx, e, fmt.Sprintf("t/u%d/s", i), "t", succeed)
		if err != nil {
			b.Fatal(err)
		}
		h.Wait()
	}
	hold := make(chan struct{})
	b.Cleanup(func() { close(hold) })
	for i := range busy {
		if _, err := groupconc.Submit(ctx, e, fmt.Sprintf("t/u%d/s", i), "t", func(context.Context) (int, error) {
			<-hold
			return 0, nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		for range e.ActiveGroupStats() {
		}
	}
}
