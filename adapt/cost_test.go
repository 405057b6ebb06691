package adapt_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
)

// An adaptive limit of 16 permits, a group's or the global cap, under
// tasks of one cost: 16/cost tasks fill it. A burst of failures early cuts
// the limit; then the backend is healthy and the load keeps the limit
// full. The limit must rise again.
func costRecovery(t *testing.T, algo func(string, int, int) groupconc.AdaptiveLimit, cost int, global bool) []int {
	var (
		once  sync.Once
		start time.Time // the first call's, on the bubble's clock
	)
	task := func(context.Context) (int, error) {
		once.Do(func() { start = time.Now() })
		time.Sleep(10 * time.Millisecond) // fake clock: the work
		if time.Since(start) < 200*time.Millisecond {
			return 0, errors.New("503") // overloaded, early on
		}
		return 1, nil
	}
	c := groupconc.AdaptiveConfig{New: algo, Min: 1}
	b, limit := adaptiveOf(c, 16, global)
	cs := []callers{{n: 64 / cost, group: "g", task: task, opts: groupconc.SubmitOptions{Cost: cost, Block: true}}}
	return underLoad(t, b, cs, 30, limit)
}

func TestALimitOfCostlyTasksRecovers(t *testing.T) {
	for name, algo := range map[string]func(string, int, int) groupconc.AdaptiveLimit{
		"aimd":     adapt.AIMDConfig{}.New,
		"gradient": adapt.GradientConfig{Classify: adapt.FailuresOverload}.New,
	} {
		for _, scope := range []string{"group", "global"} {
			for _, cost := range []int{1, 4} {
				t.Run(fmt.Sprintf("%s/%s/cost=%d", name, scope, cost), func(t *testing.T) {
					lims := costRecovery(t, algo, cost, scope == "global")
					t.Logf("limit every 100ms: %v", lims)
					if last := lims[len(lims)-1]; last < 12 {
						t.Errorf("limit %d after 2.8s of healthy load that fills it, want >= 12 (it was cut by early failures)", last)
					}
				})
			}
		}
	}
}

// adaptiveOf returns a policy of c on group "g" of limit n, or with global
// on a global cap of n, and a function that reads that limit.
func adaptiveOf(c groupconc.AdaptiveConfig, n int, global bool) (*groupconc.PolicyBuilder, func(*groupconc.GroupExecutor) int) {
	if global {
		// The group's limit stays above the cap, so the cap binds.
		b := groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
			DefaultMaxConcurrencyPerGroup(64).GlobalMaxInFlight(n).AdaptiveGlobal(c)
		return b, func(e *groupconc.GroupExecutor) int { return e.Stats().GlobalMaxInFlight }
	}
	b := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(n).AdaptiveConcurrency(c)
	return b, func(e *groupconc.GroupExecutor) int {
		s, _ := e.GroupStats("g")
		return s.MaxConcurrency
	}
}
