package adapt_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
)

// A global cap's algorithm counts a tenant's vote once, however many keys
// (users) its tasks come from, and a tenant that joins one that had the
// cap alone does not cut it before its vote is counted. Samples are fed
// by hand: a healthy tenant's every 4 ms, and a failing one's between.
func TestOneTenantsTroubleDoesNotCutTheGlobalCap(t *testing.T) {
	algos := map[string]func() groupconc.AdaptiveLimit{
		"aimd":     func() groupconc.AdaptiveLimit { return adapt.NewAIMD(1, 64, adapt.AIMDConfig{}) },
		"gradient": func() groupconc.AdaptiveLimit { return adapt.NewGradient(1, 64, adapt.GradientConfig{}) },
	}
	for name, make := range algos {
		for _, tc := range []struct {
			name  string
			alone int // windows the healthy tenant has the cap alone first
			users int // keys the failing tenant's tasks come from
		}{
			{"joins a tenant alone", 5, 1},
			{"together", 0, 1},
			{"spread over users", 0, 6},
			{"spread over users, joining", 5, 6},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				a := make()
				at := time.Unix(1000, 0)
				limit := 64
				obs := func(key, top string, st groupconc.TaskStatus, run time.Duration) {
					var err error
					switch st {
					case groupconc.StatusFailed:
						err = errors.New("backend down")
					case groupconc.StatusCancelled:
						err = context.DeadlineExceeded
					}
					limit = a.Observe(groupconc.LimitSample{GroupKey: key, TopGroupKey: top, Status: st, Err: err,
						RunTime: run, Running: limit, Limit: limit, End: at})
					at = at.Add(2 * time.Millisecond)
				}
				for range tc.alone * 50 {
					obs("good", "good", groupconc.StatusSuccess, 10*time.Millisecond)
				}
				least := limit
				for i := range 30 * 50 {
					obs("good", "good", groupconc.StatusSuccess, 10*time.Millisecond)
					// Its calls fail at once, or run out their deadline.
					if key := fmt.Sprintf("bad/u%d", i%tc.users); i%2 == 0 {
						obs(key, "bad", groupconc.StatusFailed, time.Millisecond)
					} else {
						obs(key, "bad", groupconc.StatusCancelled, 5*time.Millisecond)
					}
					if i >= 10*50 { // Gradient probes its baseline first, by halving the cap
						least = min(least, limit)
					}
				}
				if least < 48 {
					t.Errorf("one tenant's failures cut the global cap from 64 to %d", least)
				}
			})
		}
	}
}
