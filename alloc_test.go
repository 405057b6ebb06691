package groupconc_test

import (
	"context"
	"math"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
)

// A task costs one allocation, its handle, whether it runs at once or waits
// in a line first (its group's, or the global one), at any priority, with
// or without a listener (one that keeps nothing), with or without a parent
// group (the record of its walk is made in the handle's allocation), in
// both isolation modes: what W1-W3 of the benchmarks module report as
// allocs/task. A batch may add a few more, the starts of the goroutines
// that serve the ready queue: 5 % at most. An allocation that creeps into
// the path every task takes (a variable moved to the heap, say) fails it.
// Each batch is let finish (synctest.Wait) before its Waits, so no Wait
// makes a done channel and the count does not depend on how the scheduler
// interleaves.
func TestATaskAllocatesOnlyItsHandle(t *testing.T) {
	const batch = 100
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		for _, c := range []struct {
			name          string
			limit, global int
			prio          groupconc.Priority
			listen        bool
			parent        bool // the group is t/g, a child of t
		}{
			{"runs at once", groupconc.Unlimited, groupconc.Unlimited, groupconc.PriorityNormal, false, false},
			{"waits in its group's line", 1, groupconc.Unlimited, groupconc.PriorityNormal, false, false},
			{"waits in the global line", groupconc.Unlimited, 1, groupconc.PriorityNormal, false, false},
			{"waits at another priority", 1, groupconc.Unlimited, groupconc.PriorityHigh, false, false},
			{"waits, a listener told", 1, groupconc.Unlimited, groupconc.PriorityNormal, true, false},
			{"a child's runs at once", groupconc.Unlimited, groupconc.Unlimited, groupconc.PriorityNormal, false, true},
			{"a child's waits in its group's line", 1, groupconc.Unlimited, groupconc.PriorityNormal, false, true},
			{"a child's waits in the global line", groupconc.Unlimited, 1, groupconc.PriorityNormal, false, true},
		} {
			t.Run(mode.String()+"/"+c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					b := groupconc.NewPolicyBuilder().Isolation(mode).
						DefaultMaxConcurrencyPerGroup(c.limit).GlobalMaxInFlight(c.global)
					if c.listen {
						b.TaskLifecycleListener(groupconc.ListenerFuncs{})
					}
					key := "g"
					if c.parent {
						b.ParentSeparator("/")
						key = "t/g"
					}
					e := groupconc.New(mustBuild(t, b))
					defer e.Close()
					ctx := context.Background()
					done := func(context.Context) (int, error) { return 0, nil }
					opts := groupconc.SubmitOptions{Priority: c.prio}
					handles := make([]*groupconc.TaskHandle[int], batch)
					perBatch := leastAllocs(20, func() {
						for i := range handles {
							h, err := groupconc.SubmitWith(ctx, e, key, "t", done, opts)
							if err != nil {
								panic(err)
							}
							handles[i] = h
						}
						synctest.Wait()
						for _, h := range handles {
							h.Wait()
						}
					})
					if most := batch * 105 / 100; perBatch > float64(most) {
						t.Errorf("allocations per batch of %d: got %v, want at most %d (a handle per task, and a few goroutine starts)", batch, perBatch, most)
					}
				})
			})
		}
	}
}

// leastAllocs returns the least of three testing.AllocsPerRun(runs, f).
// AllocsPerRun counts the whole process's allocations, so goroutines of an
// earlier test, still ending, may add to one count. An allocation f makes
// every time adds to all three.
func leastAllocs(runs int, f func()) float64 {
	least := math.Inf(1)
	for range 3 {
		least = min(least, testing.AllocsPerRun(runs, f))
	}
	return least
}
