package groupconc_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// Under fair share a group of costly tasks and a group of cost-1 tasks,
// of equal weight and each kept busy by 8 callers, share the permit-time
// evenly: at the global cap, and at a parent's limit. A cost-8 task waits
// for all 8 permits to free, so less of the cap is used, but the two still
// share what is.
func TestCostFairShareOverTime(t *testing.T) {
	for _, tree := range []bool{false, true} {
		for _, cost := range []int{2, 4, 8} {
			synctest.Test(t, func(t *testing.T) {
				b := builder().Isolation(groupconc.IsolationFairShare).DefaultMaxConcurrencyPerGroup(8)
				heavy, light := "heavy", "light"
				if tree {
					b.ParentSeparator("/")
					heavy, light = "t/heavy", "t/light"
				} else {
					b.GlobalMaxInFlight(8)
				}
				e := newExecutor(t, b)
				const span = 2 * time.Second
				start := time.Now()
				var mu sync.Mutex
				held := map[string]time.Duration{}
				var wg sync.WaitGroup
				for i := range 16 {
					key, c := heavy, cost
					if i%2 == 1 {
						key, c = light, 1
					}
					rng := rand.New(rand.NewPCG(uint64(i), uint64(cost)))
					wg.Go(func() {
						for time.Since(start) < span {
							_, err := groupconc.Do(t.Context(), e, key, func(context.Context) (int, error) {
								d := time.Duration(1+rng.IntN(19)) * time.Millisecond
								time.Sleep(d)
								mu.Lock()
								held[key] += time.Duration(c) * d
								mu.Unlock()
								return 0, nil
							}, groupconc.SubmitOptions{Cost: c})
							if !assert.NoError(t, err) {
								return
							}
						}
					})
				}
				wg.Wait()
				share := float64(held[heavy]) / float64(held[heavy]+held[light])
				used := float64(held[heavy]+held[light]) / float64(8*span)
				t.Logf("parents %v, cost %d: the costly group's share %.3f, the cap used %.2f", tree, cost, share, used)
				assert.InDelta(t, 0.5, share, 0.05, "cost %d", cost)
				if cost < 8 {
					assert.Greater(t, used, 0.95, "a permit free while a task of either group waits for one")
				}
			})
		}
	}
}
