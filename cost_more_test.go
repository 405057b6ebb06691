package groupconc_test

import (
	"math"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A costly task of a higher priority is served first, and waits until its
// cost is free: no cheaper task behind it starts meanwhile.
func TestCostWithPriorities(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(3))
			run1, run2 := newGatedTask(t, 1), newGatedTask(t, 2)
			big, small := newGatedTask(t, 3), newGatedTask(t, 4)
			h1 := submitGated(t, e, "g", "run1", run1, groupconc.SubmitOptions{})
			h2 := submitGated(t, e, "g", "run2", run2, groupconc.SubmitOptions{})
			hs := submitGated(t, e, "g", "small", small, groupconc.SubmitOptions{Priority: groupconc.PriorityLow, Cost: 1})
			synctest.Wait()
			require.True(t, small.started.Load(), "one permit was free")
			small.Release()
			synctest.Wait()
			hb := submitGated(t, e, "g", "big", big, groupconc.SubmitOptions{Priority: groupconc.PriorityHigh, Cost: 2})
			small2 := newGatedTask(t, 5)
			hs2 := submitGated(t, e, "g", "small2", small2, groupconc.SubmitOptions{Priority: groupconc.PriorityLow})
			synctest.Wait()
			requireWaiting(t, hb, big)
			requireWaiting(t, hs2, small2) // a permit is free, but big is first
			run1.Release()
			synctest.Wait()
			assert.True(t, big.started.Load(), "2 of 3 free")
			assert.False(t, small2.started.Load())
			run2.Release()
			synctest.Wait()
			assert.True(t, small2.started.Load())
			big.Release()
			small2.Release()
			quiesce(t, e, h1, h2, hs, hb, hs2)
		})
	})
}

// Queue thresholds count tasks, not cost; Block waits for a slot with any
// cost; RejectDiscardOldest displaces a costly task like any other.
func TestCostThresholdsBlockAndDiscard(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(2).
				DefaultQueueThresholdPerGroup(1).RejectionPolicy(groupconc.RejectDiscardOldest))
			run, waiting, newer := newGatedTask(t, 1), newGatedTask(t, 2), newGatedTask(t, 3)
			hr := submitGated(t, e, "g", "run", run, groupconc.SubmitOptions{Cost: 2})
			hw := submitGated(t, e, "g", "waiting", waiting, groupconc.SubmitOptions{Cost: 5})
			synctest.Wait()
			requireWaiting(t, hw, waiting)
			st, _ := e.GroupStats("g")
			assert.Equal(t, 1, st.Waiting, "one task, whatever its cost")
			hn := submitGated(t, e, "g", "newer", newer, groupconc.SubmitOptions{Cost: 1})
			synctest.Wait()
			assert.Equal(t, groupconc.StatusRejected, doneResult(t, hw).Status, "displaced")

			blocked := newGatedTask(t, 4)
			done := make(chan *groupconc.TaskHandle[int])
			go func() {
				done <- submitGated(t, e, "g", "blocked", blocked, groupconc.SubmitOptions{Cost: 3, Block: true})
			}()
			synctest.Wait()
			select {
			case <-done:
				t.Fatal("Block returned with the queue full")
			default:
			}
			run.Release()
			hb := <-done
			synctest.Wait()
			assert.True(t, newer.started.Load())
			newer.Release()
			synctest.Wait()
			assert.True(t, blocked.started.Load(), "cost 3 under a limit of 2 runs alone")
			blocked.Release()
			quiesce(t, e, hr, hn, hb)
		})
	})
}

// An override's limit is in permits too.
func TestCostUnderAnOverride(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(10))
		first := newGatedTask(t, 0)
		first.Release()
		submitGated(t, e, "g", "first", first, groupconc.SubmitOptions{}).Wait()
		four := 4
		require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{MaxConcurrency: &four}))
		a, b := newGatedTask(t, 1), newGatedTask(t, 2)
		ha := submitGated(t, e, "g", "a", a, groupconc.SubmitOptions{Cost: 3})
		hb := submitGated(t, e, "g", "b", b, groupconc.SubmitOptions{Cost: 2})
		synctest.Wait()
		requireWaiting(t, hb, b)
		six := 6
		require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{MaxConcurrency: &six}))
		synctest.Wait()
		assert.True(t, b.started.Load(), "a raised override lets the cost in")
		a.Release()
		b.Release()
		quiesce(t, e, ha, hb)
	})
}

// A layer with no limit makes no task wait, whatever the costs it holds:
// a cost of math.MaxInt once filled an Unlimited group's count, and the
// next task waited for it.
func TestCostAtAnUnlimitedLayerNeverWaits(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(groupconc.Unlimited))
			big := newGatedTask(t, 1)
			hb := submitGated(t, e, "g", "", big, groupconc.SubmitOptions{Cost: math.MaxInt})
			small := newGatedTask(t, 2)
			hs := submitGated(t, e, "g", "", small, groupconc.SubmitOptions{})
			synctest.Wait()
			assert.True(t, big.started.Load())
			assert.True(t, small.started.Load(), "a task waited at an Unlimited layer")
			big.Release()
			small.Release()
			quiesce(t, e, hb, hs)
		})
	})
}

// Costs too large to add up (two of math.MaxInt) count as a bounded
// number of permits where no limit is set: the counts never wrap. So a
// global cap set while they run holds the next task back until they end.
func TestHugeCostsNeverWrapTheCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(groupconc.Unlimited))
		a, b := newGatedTask(t, 1), newGatedTask(t, 2)
		ha := submitGated(t, e, "g", "", a, groupconc.SubmitOptions{Cost: math.MaxInt})
		hb := submitGated(t, e, "g", "", b, groupconc.SubmitOptions{Cost: math.MaxInt})
		synctest.Wait()
		assert.Positive(t, e.Stats().GlobalInFlight)
		assert.Positive(t, groupStats(t, e, "g").RunningCost)
		p, err := builder().DefaultMaxConcurrencyPerGroup(groupconc.Unlimited).GlobalMaxInFlight(4).Build()
		require.NoError(t, err)
		require.NoError(t, e.UpdatePolicy(p))
		c := newGatedTask(t, 3)
		hc := submitGated(t, e, "g", "", c, groupconc.SubmitOptions{})
		synctest.Wait()
		assert.False(t, c.started.Load(), "a task started over the global cap")
		a.Release()
		b.Release()
		synctest.Wait()
		assert.True(t, c.started.Load())
		c.Release()
		quiesce(t, e, ha, hb, hc)
	})
}

// A cost above 2^40 takes its own cost at a layer with a limit:
// two tasks of cost 2^41 under a limit of 2^41 run one at a time, and 32 of
// cost 2^45 fill a global cap of 2^50.
func TestACostAboveTwoToTheFortyTakesItsCostUnderALimit(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1<<41))
			a, b := newGatedTask(t, 1), newGatedTask(t, 2)
			ha := submitGated(t, e, "g", "", a, groupconc.SubmitOptions{Cost: 1 << 41})
			hb := submitGated(t, e, "g", "", b, groupconc.SubmitOptions{Cost: 1 << 41})
			synctest.Wait()
			requireWaiting(t, hb, b)
			st, _ := e.GroupStats("g")
			assert.Equal(t, 1<<41, st.RunningCost)
			a.Release()
			b.Release()
			quiesce(t, e, ha, hb)
		})
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).GlobalMaxInFlight(1<<50).DefaultMaxConcurrencyPerGroup(groupconc.Unlimited))
			k := newGatedTask(t, 0)
			var hs []*groupconc.TaskHandle[int]
			for range 40 {
				hs = append(hs, submitGated(t, e, "g", "", k, groupconc.SubmitOptions{Cost: 1 << 45}))
			}
			synctest.Wait()
			assert.Equal(t, 32, e.Stats().Running, "2^50 / 2^45")
			k.Release()
			quiesce(t, e, hs...)
		})
	})
}

// Under no limit a task holds its whole cost too, however large, and a
// limit set later counts it: after the global cap or the group's limit is
// lowered below what a task of cost 2^45 holds, no task starts until it
// ends.
func TestACostlyTaskUnderNoLimitHoldsItsCostForALimitSetLater(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, layer := range []string{"global", "group"} {
			t.Run(layer, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					limited := func(n int) *groupconc.PolicyBuilder {
						if layer == "global" {
							return builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(groupconc.Unlimited).GlobalMaxInFlight(n)
						}
						return builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(n)
					}
					e := newExecutor(t, limited(groupconc.Unlimited))
					a, b := newGatedTask(t, 1), newGatedTask(t, 2)
					ha := submitGated(t, e, "g", "", a, groupconc.SubmitOptions{Cost: 1 << 45})
					synctest.Wait()
					assert.Equal(t, 1<<45, groupStats(t, e, "g").RunningCost)
					assert.Equal(t, 1<<45, e.Stats().GlobalInFlight)
					require.NoError(t, e.UpdatePolicy(mustBuild(t, limited(1<<44))))
					hb := submitGated(t, e, "g", "", b, groupconc.SubmitOptions{})
					synctest.Wait()
					requireWaiting(t, hb, b)
					a.Release()
					synctest.Wait()
					assert.True(t, b.started.Load())
					b.Release()
					quiesce(t, e, ha, hb)
				})
			})
		}
	})
}
