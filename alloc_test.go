package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
)

// A task costs one allocation, its handle, whether it runs at once or
// waits in a line first, at any priority, with or without a listener
// (one that keeps nothing), in both isolation modes: what W1-W3 of the benchmarks module report as
// allocs/task. A batch may add one more, the start of the goroutine that
// serves the ready queue. An allocation that creeps into the path every
// task takes (a variable moved to the heap, say) fails it. Each batch is
// let finish (synctest.Wait) before its Waits, so no Wait makes a done
// channel and the count does not depend on how the scheduler interleaves.
func TestATaskAllocatesOnlyItsHandle(t *testing.T) {
	const batch = 100
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		for _, c := range []struct {
			name   string
			limit  int
			prio   groupconc.Priority
			listen bool
		}{
			{"runs at once", 0, groupconc.PriorityNormal, false},
			{"waits in line", 1, groupconc.PriorityNormal, false},
			{"waits in line at another priority", 1, groupconc.PriorityHigh, false},
			{"waits in line, a listener told", 1, groupconc.PriorityNormal, true},
		} {
			t.Run(mode.String()+"/"+c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					b := groupconc.NewPolicyBuilder().Isolation(mode).GlobalMaxInFlight(8)
					if c.limit > 0 {
						b.DefaultMaxConcurrencyPerGroup(c.limit)
					}
					if c.listen {
						b.TaskLifecycleListener(groupconc.ListenerFuncs{})
					}
					e := groupconc.New(mustBuild(t, b))
					defer e.Close()
					ctx := context.Background()
					done := func(context.Context) (int, error) { return 0, nil }
					opts := groupconc.SubmitOptions{Priority: c.prio}
					handles := make([]*groupconc.TaskHandle[int], batch)
					perBatch := testing.AllocsPerRun(20, func() {
						for i := range handles {
							h, err := groupconc.SubmitWith(ctx, e, "g", "t", done, opts)
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
					if perBatch > batch+1 {
						t.Errorf("allocations per batch of %d: got %v, want at most %d (a handle per task, and the start of the goroutine serving them)", batch, perBatch, batch+1)
					}
				})
			})
		}
	}
}
