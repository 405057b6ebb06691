package adapt_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
)

// tenantsUnderOneCap runs tenant "good" (goodWorkers closed-loop callers,
// each task 10ms on a backend with spare capacity) and tenant "bad"
// (badWorkers callers whose backend never answers: every task runs out its
// 5ms deadline) under fair share, a global cap of 32 made adaptive by
// algo, and adaptive group limits of 24. It returns the global cap sampled
// every 100ms.
func tenantsUnderOneCap(t *testing.T, algo func(string, int, int) groupconc.AdaptiveLimit, goodWorkers, badWorkers int, d time.Duration) []int {
	good := func(ctx context.Context) (int, error) {
		select {
		case <-time.After(10 * time.Millisecond):
			return 1, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	bad := func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	b := groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
		GlobalMaxInFlight(32).DefaultMaxConcurrencyPerGroup(24).
		AdaptiveConcurrency(groupconc.AdaptiveConfig{New: algo, Min: 1}).
		AdaptiveGlobal(groupconc.AdaptiveConfig{New: algo, Min: 1})
	cs := []callers{
		{n: goodWorkers, group: "good", task: good},
		{n: badWorkers, group: "bad", task: bad, timeout: 5 * time.Millisecond},
	}
	return underLoad(t, b, cs, int(d/(100*time.Millisecond)), func(e *groupconc.GroupExecutor) int {
		return e.Stats().GlobalMaxInFlight
	})
}

// One tenant whose backend times out every call, from the start, must not
// cut the adaptive global cap of every tenant.
func TestOneTenantsDeadlinesDoNotCutTheGlobalCap(t *testing.T) {
	for name, algo := range map[string]func(string, int, int) groupconc.AdaptiveLimit{
		"gradient": adapt.GradientConfig{}.New,
		"aimd":     adapt.AIMDConfig{}.New,
	} {
		t.Run(name, func(t *testing.T) {
			caps := tenantsUnderOneCap(t, algo, 30, 2, 5*time.Second)
			t.Logf("global cap every 100ms: %v", caps)
			if lo := slices.Min(caps); lo < 16 {
				t.Errorf("global cap fell to %d, want >= 16: only tenant bad's backend is overloaded", lo)
			}
			if last := caps[len(caps)-1]; last < 25 {
				t.Errorf("global cap %d after 5s, want >= 25: tenant good alone fills its limit of 24", last)
			}
		})
	}
}
