package groupconc_test

import (
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A task whose cost exceeds a limit runs alone at that layer, also when
// the limit is raised while it runs but stays below its cost: it holds the
// whole of the raised limit, and is reported so. A limit raised to its
// cost or above lets others hold the rest.
func TestCostAboveALimitRaisedWhileItRunsStillRunsAlone(t *testing.T) {
	forEachLayer(t, func(t *testing.T, y costLayer, mode groupconc.IsolationMode, en entry) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, y.b(mode, 2))
			big := newGatedTask(t, 9)
			cb := en.start(t, t.Context(), e, y.keys[1], "big", 5, big.Fn)
			synctest.Wait()
			require.True(t, big.started.Load(), "a cost of 5 takes the whole limit of 2")
			held(t, e, y, 2, 1)

			require.NoError(t, e.UpdatePolicy(mustBuild(t, y.b(mode, 4))))
			alone := newGatedTask(t, 0)
			ha := submitGated(t, e, y.keys[2], "alone", alone, groupconc.SubmitOptions{})
			synctest.Wait()
			assert.False(t, alone.started.Load(), "a cost of 5 runs alone under a limit raised to 4")
			held(t, e, y, 4, 1)

			require.NoError(t, e.UpdatePolicy(mustBuild(t, y.b(mode, 8))))
			synctest.Wait()
			assert.True(t, alone.started.Load(), "5+1 fit in a limit raised to 8")
			held(t, e, y, 6, 2)

			alone.Release()
			big.Release()
			st, err := cb.status()
			assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
			quiesce(t, e, append(handles(cb), ha)...)
		})
	})
}

// held checks the permits the stats report held at layer y, or at a
// bulkhead the tasks in flight, which InFlight counts.
func held(t *testing.T, e *groupconc.GroupExecutor, y costLayer, want, tasks int) {
	t.Helper()
	switch y.name {
	case "global":
		assert.Equal(t, want, e.Stats().GlobalInFlight, "GlobalInFlight")
	case "bulkhead":
		assert.Equal(t, tasks, groupStats(t, e, "g").InFlight, "InFlight")
	case "concurrency":
		assert.Equal(t, want, groupStats(t, e, "g").RunningCost, "RunningCost")
	case "parent bulkhead":
		assert.Equal(t, tasks, groupStats(t, e, "acme").InFlight, "the parent's InFlight")
	case "parent concurrency":
		assert.Equal(t, want, groupStats(t, e, "acme").RunningCost, "the parent's RunningCost")
	}
}

// A task topped up while it waits at a later layer gives back all it holds
// when it leaves: when it is cancelled, and when a lowered limit sends it
// back to wait again, after which it runs alone under that limit. It
// waits at its parent's limit, which is later than its own in both modes.
func TestCostToppedUpWhileItWaitsGivesAllBack(t *testing.T) {
	for _, leave := range []string{"cancelled", "sent back"} {
		t.Run(leave, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
				synctest.Test(t, func(t *testing.T) {
					e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(10).
						PerGroupMaxConcurrency(map[string]int{"acme": 6, "acme/g": 2}))
					hold := newGatedTask(t, 0)
					hh := submitGated(t, e, "acme/h", "hold", hold, groupconc.SubmitOptions{Cost: 3})
					synctest.Wait()
					big := newGatedTask(t, 9)
					hb := submitGated(t, e, "acme/g", "big", big, groupconc.SubmitOptions{Cost: 5})
					synctest.Wait()
					require.False(t, big.started.Load(), "it holds acme/g's 2 and waits for 5 of acme's")
					four := 4
					require.NoError(t, e.SetGroupOverride("acme/g", groupconc.GroupOverride{MaxConcurrency: &four}))
					synctest.Wait()
					if leave == "cancelled" {
						require.True(t, hb.Cancel())
					} else {
						one := 1
						require.NoError(t, e.SetGroupOverride("acme/g", groupconc.GroupOverride{MaxConcurrency: &one}))
					}
					hold.Release()
					synctest.Wait()
					if leave == "sent back" {
						require.True(t, big.started.Load(), "a cost of 5 under acme/g's limit of 1")
						assert.Equal(t, 1, groupStats(t, e, "acme/g").RunningCost, "the whole limit")
						small := newGatedTask(t, 0)
						hs := submitGated(t, e, "acme/g", "small", small, groupconc.SubmitOptions{})
						synctest.Wait()
						assert.False(t, small.started.Load(), "it runs alone")
						big.Release()
						small.Release()
						quiesce(t, e, hh, hb, hs)
						return
					}
					next := newGatedTask(t, 0)
					hn := submitGated(t, e, "acme/g", "next", next, groupconc.SubmitOptions{Cost: 4})
					synctest.Wait()
					assert.True(t, next.started.Load(), "acme/g's 4 are free again")
					next.Release()
					quiesce(t, e, hh, hb, hn)
				})
			})
		})
	}
}

// Limits raised and lowered while tasks take and give back whole limits,
// at a group, its parent and the global cap, leave no task waiting and no
// permit held.
func TestCostWholeTakesRacingChangesOfLimitsLeaveNothing(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		b := func(global int) *groupconc.PolicyBuilder {
			return modeBuilder(mode).ParentSeparator("/").GlobalMaxInFlight(global).DefaultMaxConcurrencyPerGroup(2)
		}
		e := newExecutor(t, b(3))
		keys := []string{"acme/g", "acme", "other"}
		for _, k := range keys { // the groups exist before their overrides
			submit(t, t.Context(), e, k, "first", succeed).Wait()
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		stopped := sync.OnceFunc(func() { close(stop); wg.Wait() })
		defer stopped()
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n, m := 1+i%6, 1+i/2%6
				assert.NoError(t, e.SetGroupOverride("acme/g", groupconc.GroupOverride{MaxConcurrency: &n}))
				assert.NoError(t, e.SetGroupOverride("acme", groupconc.GroupOverride{MaxConcurrency: &m}))
				if i%4 == 0 {
					assert.NoError(t, e.UpdatePolicy(mustBuild(t, b(1+i/4%6))))
				}
			}
		})
		var hs []*groupconc.TaskHandle[int]
		for i := range 2000 {
			h, err := groupconc.SubmitWith(t.Context(), e, keys[i%3], "t", succeed, groupconc.SubmitOptions{Cost: 1 + i%7})
			require.NoError(t, err)
			hs = append(hs, h)
		}
		for _, h := range hs {
			h.Wait()
		}
		stopped()
		require.NoError(t, e.Quiescent())
	})
}
