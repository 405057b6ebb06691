package adapt_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
)

// A group of cost-4 tasks under an adaptive limit of 16 permits: 4 tasks
// fill it. A burst of failures early cuts the limit; then the backend is
// healthy and the load keeps the limit full. The limit must rise again.
func costRecovery(t *testing.T, algo func(string, int, int) groupconc.AdaptiveLimit, cost int) []int {
	var lims []int
	synctest.Test(t, func(t *testing.T) {
		p, err := groupconc.NewPolicyBuilder().
			DefaultMaxConcurrencyPerGroup(16).
			AdaptiveConcurrency(groupconc.AdaptiveConfig{New: algo, Min: 1}).
			Build()
		if err != nil {
			t.Fatal(err)
		}
		e := groupconc.New(p)
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var id atomic.Int64
		start := time.Now()
		task := func(ctx context.Context) (int, error) {
			time.Sleep(10 * time.Millisecond) // fake clock: the work
			if time.Since(start) < 200*time.Millisecond {
				return 0, errors.New("503") // overloaded, early on
			}
			return 1, nil
		}
		for range 64 / cost {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					h, err := groupconc.SubmitWith(ctx, e, "g", fmt.Sprint(id.Add(1)), task, groupconc.SubmitOptions{Cost: cost, Block: true})
					if err != nil {
						return
					}
					h.Wait()
				}
			}()
		}
		for range 30 {
			time.Sleep(100 * time.Millisecond) // fake clock
			s, _ := e.GroupStats("g")
			lims = append(lims, s.MaxConcurrency)
		}
		stop()
		wg.Wait()
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	return lims
}

func TestALimitOfCostlyTasksRecovers(t *testing.T) {
	for name, algo := range map[string]func(string, int, int) groupconc.AdaptiveLimit{
		"aimd":     adapt.AIMDConfig{}.New,
		"gradient": adapt.GradientConfig{Classify: adapt.FailuresOverload}.New,
	} {
		for _, cost := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/cost=%d", name, cost), func(t *testing.T) {
				lims := costRecovery(t, algo, cost)
				t.Logf("limit every 100ms: %v", lims)
				if last := lims[len(lims)-1]; last < 12 {
					t.Errorf("limit %d after 2.8s of healthy load that fills it, want >= 12 (it was cut by early failures)", last)
				}
			})
		}
	}
}
