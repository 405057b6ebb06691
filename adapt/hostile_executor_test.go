package adapt_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
)

// Hostile signals against a real executor, in fake time: tasks that end at
// once (the bubble's clock does not move), tasks whose context ends at
// once, calls of an hour, failures, and a LimitChanges
// function that calls back into the executor and panics. Users adapt under
// tenants, as does the global cap. No panic leaves the library, every
// caller returns, and every limit stays within its bounds.
func TestAdaptiveLimitsTakeHostileSignals(t *testing.T) {
	for name, algo := range map[string]func(string, int, int) groupconc.AdaptiveLimit{
		"aimd":     adapt.AIMDConfig{Timeout: time.Millisecond}.New,
		"gradient": adapt.GradientConfig{Classify: adapt.FailuresOverload}.New,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { hostile(t, algo) })
		})
	}
}

func hostile(t *testing.T, algo func(string, int, int) groupconc.AdaptiveLimit) {
	var e *groupconc.GroupExecutor
	var told atomic.Int64
	c := groupconc.AdaptiveConfig{New: algo, Min: 2}
	p, err := groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).ParentSeparator("/").
		GlobalMaxInFlight(24).PerGroupMaxConcurrency(map[string]int{"t1": 10, "t2": 10}).
		DefaultMaxConcurrencyPerGroup(8).AdaptiveConcurrency(c).AdaptiveGlobal(c).
		LimitChanges(func(ch groupconc.LimitChange) {
			// Calls back into the executor, on the task's goroutine.
			switch n := told.Add(1); {
			case n%7 == 0:
				_ = e.UpdatePolicy(e.Policy())
			case n%5 == 0 && ch.GroupKey != "":
				_ = e.SetGroupOverride(ch.GroupKey, groupconc.GroupOverride{MaxConcurrency: &ch.New})
			case n%5 == 1 && ch.GroupKey != "":
				_ = e.SetGroupOverride(ch.GroupKey, groupconc.GroupOverride{})
			case n%3 == 0:
				panic("a hostile LimitChanges")
			}
			_ = e.Stats()
			_, _ = e.GroupStats(ch.GroupKey)
		}).Build()
	if err != nil {
		t.Fatal(err)
	}
	e = groupconc.New(p)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	keys := []string{"t1", "t1/a", "t1/b", "t2/a", "t2/b", "solo"}
	for i := range 40 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 6))
			for id := 0; ctx.Err() == nil; id++ {
				k := keys[rng.IntN(len(keys))]
				kind := rng.IntN(100)
				cost := []int{1, 4, 30}[rng.IntN(3)]
				if kind >= 30 && kind < 36 {
					cost = 1 // a long call of the whole cap would hold every other back
				}
				cctx, cancel := context.WithCancel(ctx)
				if kind >= 20 && kind < 30 {
					cctx, cancel = context.WithTimeout(ctx, 0) // ends at once
				}
				h, err := groupconc.SubmitWith(cctx, e, k, fmt.Sprint(i, ".", id), func(tctx context.Context) (int, error) {
					switch {
					case kind < 20: // the clock does not move
						return 0, nil
					case kind < 30:
						return 0, tctx.Err()
					case kind < 31:
						time.Sleep(time.Hour) // fake clock
						return 0, nil
					case kind < 36:
						time.Sleep(10 * time.Second)
						return 0, nil
					case kind < 45:
						return 0, errors.New("503")
					}
					time.Sleep(time.Duration(rng.IntN(3)+1) * time.Millisecond)
					return 0, nil
				}, groupconc.SubmitOptions{Cost: cost, Block: true})
				if err == nil {
					h.Wait()
				}
				cancel()
				if err != nil || kind < 30 {
					time.Sleep(time.Millisecond) // a caller that retried at once would hold the fake clock still
				}
			}
		})
	}
	for step := range 400 {
		time.Sleep(30 * time.Second)
		if g := e.Stats().GlobalMaxInFlight; g < 2 || g > 24 {
			t.Errorf("step %d: the global cap %d, want within [2, 24]", step, g)
		}
		for s := range e.AllGroupStats() {
			hi := 8
			if s.GroupKey == "t1" || s.GroupKey == "t2" {
				hi = 10
			}
			if s.MaxConcurrency < 1 || s.MaxConcurrency > hi {
				t.Errorf("step %d: %s's limit %d, want within [1, %d]", step, s.GroupKey, s.MaxConcurrency, hi)
			}
		}
	}
	stop()
	wg.Wait()
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d limit changes, %+v", told.Load(), e.Stats())
	if told.Load() == 0 {
		t.Error("no limit moved")
	}
}
