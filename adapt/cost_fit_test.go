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

// A limit of 8 permits, a group's or the global cap, holds two tasks of
// cost 4. A limit of 6 or 7 holds one, since the next does not fit, so it
// is as full as the costs let it be. A burst of failures cuts the limit
// there, then the backend is healthy and the load keeps the limit full.
// The limit must climb back to 8.
func TestALimitOfTasksThatDoNotFitItExactlyRecovers(t *testing.T) {
	for name, algo := range map[string]func(string, int, int) groupconc.AdaptiveLimit{
		"aimd":     adapt.AIMDConfig{}.New,
		"gradient": adapt.GradientConfig{Classify: adapt.FailuresOverload}.New,
	} {
		for _, c := range []struct {
			costs  []int
			min    int
			global bool
		}{
			{[]int{4}, 1, false}, {[]int{4}, 6, false}, {[]int{4}, 7, false}, {[]int{4, 1}, 6, false},
			{[]int{4}, 1, true}, {[]int{4}, 6, true}, {[]int{4}, 7, true}, {[]int{4, 1}, 6, true},
		} {
			t.Run(fmt.Sprintf("%s/costs=%v/min=%d/global=%v", name, c.costs, c.min, c.global), func(t *testing.T) {
				lims := fitRecovery(t, algo, c.costs, c.min, c.global)
				t.Logf("limit every 100ms: %v", lims)
				if last := lims[len(lims)-1]; last < 8 {
					t.Errorf("limit %d after 3.8s of healthy load, want 8 (it was cut by failures)", last)
				}
			})
		}
	}
}

// fitRecovery runs tasks of costs, 8 callers each, under a limit of 8
// whose Min is lo. Their backend fails from 1s to 1.2s.
func fitRecovery(t *testing.T, algo func(string, int, int) groupconc.AdaptiveLimit, costs []int, lo int, global bool) []int {
	var (
		once  sync.Once
		start time.Time // the first call's, on the bubble's clock
	)
	task := func(context.Context) (int, error) {
		once.Do(func() { start = time.Now() })
		time.Sleep(10 * time.Millisecond) // fake clock: the work
		if d := time.Since(start); d > time.Second && d < 1200*time.Millisecond {
			return 0, errors.New("503")
		}
		return 1, nil
	}
	c := groupconc.AdaptiveConfig{New: algo, Min: lo}
	b, limit := adaptiveOf(c, 8, global)
	var cs []callers
	for _, cost := range costs {
		cs = append(cs, callers{n: 8, group: "g", task: task, opts: groupconc.SubmitOptions{Cost: cost, Block: true}})
	}
	return underLoad(t, b, cs, 50, limit)
}
