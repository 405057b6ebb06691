package groupconc_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
)

// wild is an AdaptiveLimit that wants limits far out of bounds, or one
// past the limit a task started under, in turn.
type wild struct{ n atomic.Int64 }

func (w *wild) new(string, int, int) groupconc.AdaptiveLimit { return w }

func (w *wild) Observe(s groupconc.LimitSample) int {
	switch w.n.Add(1) % 5 {
	case 0:
		return -1 << 62
	case 1:
		return 1 << 62
	case 2:
		return s.Limit - 1
	case 3:
		return s.Limit + 1
	}
	return 0
}

// Every group's limit, and the global cap, stay within the bounds of the
// policy and override in force at every instant, while tasks end and
// their samples pull the limits every way, UpdatePolicy swaps adaptive
// settings (and drops them), and overrides pause a group and set or drop
// its MaxConcurrency: a sample of a task that began under other settings
// moves nothing.
func TestAdaptiveLimitsStayWithinTheSettingsInForce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := new(wild)
		fair := func() *groupconc.PolicyBuilder {
			return groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare)
		}
		type bounds struct{ lo, hi, minOf, globalLo, globalHi int } // minOf: the group Min, 0 if not adaptive
		policies := []struct {
			p *groupconc.GroupPolicy
			b bounds
		}{
			{mustBuild(t, fair().GlobalMaxInFlight(12).DefaultMaxConcurrencyPerGroup(8).
				AdaptiveConcurrency(groupconc.AdaptiveConfig{New: w.new, Min: 2, QueueFactor: 1}).
				AdaptiveGlobal(groupconc.AdaptiveConfig{New: w.new, Min: 3})), bounds{2, 8, 2, 3, 12}},
			{mustBuild(t, fair().GlobalMaxInFlight(5).DefaultMaxConcurrencyPerGroup(4).
				AdaptiveConcurrency(groupconc.AdaptiveConfig{New: w.new, Min: 3}).
				AdaptiveGlobal(groupconc.AdaptiveConfig{New: w.new, Min: 5})), bounds{3, 4, 3, 5, 5}},
			{mustBuild(t, fair().GlobalMaxInFlight(7).DefaultMaxConcurrencyPerGroup(6)), bounds{6, 6, 0, 7, 7}},
		}
		e := groupconc.New(policies[0].p)
		defer e.Close()
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		keys := []string{"a", "b", "c"}
		for i := range 12 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(i), 1))
				for id := 0; ctx.Err() == nil; id++ {
					run := time.Duration(rng.IntN(5)+1) * time.Millisecond
					h, err := groupconc.Submit(ctx, e, keys[rng.IntN(len(keys))], strconv.Itoa(id), func(context.Context) (int, error) {
						time.Sleep(run) // fake clock
						return 0, nil
					})
					if err != nil {
						return
					}
					if h.Wait().Status == groupconc.StatusRejected {
						// Turned away by a full queue: a caller that
						// retried at once would hold the fake clock still.
						time.Sleep(time.Millisecond)
					}
				}
			})
		}
		cur, capB := 0, 0 // the policy in force; b's MaxConcurrency override, 0 if none
		on, off, three := true, false, 3
		for step := range 400 {
			time.Sleep(700 * time.Microsecond)
			var err error
			switch step % 11 {
			case 3:
				cur = (cur + 1) % len(policies)
				err = e.UpdatePolicy(policies[cur].p)
			case 5:
				err = e.SetGroupOverride("a", groupconc.GroupOverride{Paused: &on})
			case 7:
				err = e.SetGroupOverride("a", groupconc.GroupOverride{Paused: &off})
			case 8:
				if err = e.SetGroupOverride("b", groupconc.GroupOverride{MaxConcurrency: &three}); err == nil {
					capB = three
				}
			case 10:
				if err = e.SetGroupOverride("b", groupconc.GroupOverride{}); err == nil {
					capB = 0
				}
			}
			if err != nil && !errors.Is(err, groupconc.ErrUnknownGroup) { // a group not used yet
				t.Fatalf("step %d: %v", step, err)
			}
			b := policies[cur].b
			for _, k := range keys {
				st, ok := e.GroupStats(k)
				if !ok {
					continue
				}
				lo, hi := b.lo, b.hi
				if k == "b" && capB > 0 {
					hi = capB
					lo = hi
					if b.minOf > 0 {
						lo = min(b.minOf, hi)
					}
				}
				if st.MaxConcurrency < lo || st.MaxConcurrency > hi {
					t.Errorf("step %d, policy %d: %s's limit %d, want within [%d, %d]", step, cur, k, st.MaxConcurrency, lo, hi)
				}
			}
			if g := e.Stats().GlobalMaxInFlight; g < b.globalLo || g > b.globalHi {
				t.Errorf("step %d, policy %d: the global cap %d, want within [%d, %d]", step, cur, g, b.globalLo, b.globalHi)
			}
		}
		stop()
		wg.Wait()
	})
}
