package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Each test here checks one sentence of the Cost paragraph, and of its
// details, through SubmitWith (with Block, MaxWait, Priority) and Do.

// costLayer is one limit a task passes, set to 4, with the keys of the
// three tasks a test runs against it. Every other limit is far away.
type costLayer struct {
	name string
	b    func(mode groupconc.IsolationMode, limit int) *groupconc.PolicyBuilder
	keys [3]string
}

var costLayers = []costLayer{
	{"global", func(m groupconc.IsolationMode, n int) *groupconc.PolicyBuilder {
		return builder().Isolation(m).GlobalMaxInFlight(n).DefaultMaxConcurrencyPerGroup(10)
	}, [3]string{"g", "g", "g"}},
	{"bulkhead", func(m groupconc.IsolationMode, n int) *groupconc.PolicyBuilder {
		return modeBuilder(m).DefaultMaxInFlightPerGroup(n).DefaultMaxConcurrencyPerGroup(10)
	}, [3]string{"g", "g", "g"}},
	{"concurrency", func(m groupconc.IsolationMode, n int) *groupconc.PolicyBuilder {
		return modeBuilder(m).DefaultMaxConcurrencyPerGroup(n)
	}, [3]string{"g", "g", "g"}},
	{"parent bulkhead", func(m groupconc.IsolationMode, n int) *groupconc.PolicyBuilder {
		return modeBuilder(m).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(10).PerGroupMaxInFlight(map[string]int{"acme": n})
	}, [3]string{"acme/u1", "acme/u2", "acme/u3"}},
	{"parent concurrency", func(m groupconc.IsolationMode, n int) *groupconc.PolicyBuilder {
		return modeBuilder(m).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(10).PerGroupMaxConcurrency(map[string]int{"acme": n})
	}, [3]string{"acme/u1", "acme/u2", "acme/u3"}},
}

// forEachLayer runs f per layer, mode and entry.
func forEachLayer(t *testing.T, f func(t *testing.T, y costLayer, mode groupconc.IsolationMode, en entry)) {
	for _, y := range costLayers {
		t.Run(y.name, func(t *testing.T) {
			forEachEntry(t, costEntries, func(t *testing.T, mode groupconc.IsolationMode, en entry) { f(t, y, mode, en) })
		})
	}
}

// A task of cost c takes c permits at every limit it passes, and nothing
// overtakes a task waiting for them: not a cheaper one behind it.
func TestCostTakesItsCostAtEveryLimitAndIsNotOvertaken(t *testing.T) {
	forEachLayer(t, func(t *testing.T, y costLayer, mode groupconc.IsolationMode, en entry) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, y.b(mode, 4))
			first, costly, cheap := newGatedTask(t, 1), newGatedTask(t, 2), newGatedTask(t, 3)
			hf := submitGated(t, e, y.keys[0], "first", first, groupconc.SubmitOptions{Cost: 3})
			synctest.Wait()
			require.True(t, first.started.Load())
			cc := en.start(t, t.Context(), e, y.keys[1], "costly", 2, costly.Fn)
			ch := en.start(t, t.Context(), e, y.keys[2], "cheap", 1, cheap.Fn)
			synctest.Wait()
			assert.False(t, costly.started.Load(), "cost 2 started with 1 of 4 permits free")
			assert.False(t, cheap.started.Load(), "a cheaper task overtook a waiting costly one")
			first.Release()
			synctest.Wait()
			assert.True(t, costly.started.Load() && cheap.started.Load(), "2+1 fit in 4")
			costly.Release()
			cheap.Release()
			for _, c := range []*call{cc, ch} {
				st, err := c.status()
				assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
			}
			quiesce(t, e, append(handles(cc, ch), hf)...)
		})
	})
}

// A task whose cost exceeds a limit takes the whole limit there, runs
// alone, and never waits forever, also when the limit is lowered below its
// cost while it waits. A limit raised while it waits lets it in at once.
func TestCostAboveALimitChangedWhileItWaits(t *testing.T) {
	for _, change := range []string{"lowered", "raised"} {
		t.Run(change, func(t *testing.T) {
			forEachLayer(t, func(t *testing.T, y costLayer, mode groupconc.IsolationMode, en entry) {
				synctest.Test(t, func(t *testing.T) {
					e := newExecutor(t, y.b(mode, 4))
					var runners []*gatedTask
					var hs []*groupconc.TaskHandle[int]
					for range 4 {
						k := newGatedTask(t, 0)
						runners = append(runners, k)
						hs = append(hs, submitGated(t, e, y.keys[0], "", k, groupconc.SubmitOptions{}))
					}
					synctest.Wait()
					big := newGatedTask(t, 9)
					cb := en.start(t, t.Context(), e, y.keys[1], "big", 3, big.Fn)
					require.False(t, big.started.Load())
					if change == "raised" {
						require.NoError(t, e.UpdatePolicy(mustBuild(t, y.b(mode, 8))))
						synctest.Wait()
						assert.True(t, big.started.Load(), "4+3 fit in a raised limit of 8")
					} else {
						require.NoError(t, e.UpdatePolicy(mustBuild(t, y.b(mode, 2))))
						for _, k := range runners[:3] {
							k.Release()
						}
						synctest.Wait()
						assert.False(t, big.started.Load(), "it takes the whole limit of 2: one is still held")
						runners[3].Release()
						synctest.Wait()
						require.True(t, big.started.Load(), "a cost of 3 waits forever under a limit of 2")
						if y.name == "global" {
							assert.Equal(t, 2, e.Stats().GlobalInFlight, "the whole global cap")
						}
						if y.name == "concurrency" {
							assert.Equal(t, 2, groupStats(t, e, "g").RunningCost, "the whole limit")
						}
						alone := newGatedTask(t, 0)
						hs = append(hs, submitGated(t, e, y.keys[2], "", alone, groupconc.SubmitOptions{}))
						synctest.Wait()
						assert.False(t, alone.started.Load(), "it runs alone at that limit")
						alone.Release()
					}
					big.Release()
					for _, k := range runners {
						k.Release()
					}
					st, err := cb.status()
					assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
					quiesce(t, e, append(handles(cb), hs...)...)
				})
			})
		})
	}
}

// Queue thresholds count tasks, not cost: the global one under
// IsolationOff, a group's, and an ancestor's.
func TestCostQueueThresholdsCountTasks(t *testing.T) {
	for _, q := range []struct {
		name, layer string
		b           func(mode groupconc.IsolationMode) *groupconc.PolicyBuilder
		keys        [3]string
		modes       []groupconc.IsolationMode
	}{
		{"global", "global", func(m groupconc.IsolationMode) *groupconc.PolicyBuilder {
			return builder().Isolation(m).GlobalMaxInFlight(2).GlobalQueueThreshold(2).DefaultMaxConcurrencyPerGroup(10)
		}, [3]string{"a", "b", "c"}, []groupconc.IsolationMode{groupconc.IsolationOff}},
		{"group", "group", func(m groupconc.IsolationMode) *groupconc.PolicyBuilder {
			return modeBuilder(m).DefaultMaxConcurrencyPerGroup(2).DefaultQueueThresholdPerGroup(2)
		}, [3]string{"g", "g", "g"}, nil},
		{"parent", "group", func(m groupconc.IsolationMode) *groupconc.PolicyBuilder {
			return modeBuilder(m).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(10).
				PerGroupMaxConcurrency(map[string]int{"acme": 2}).PerGroupQueueThreshold(map[string]int{"acme": 2})
		}, [3]string{"acme/u1", "acme/u2", "acme/u3"}, nil},
	} {
		t.Run(q.name, func(t *testing.T) {
			forEachEntry(t, costEntries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
				if q.modes != nil && mode != q.modes[0] {
					t.Skip("the global queue threshold is IsolationOff's")
				}
				synctest.Test(t, func(t *testing.T) {
					e := newExecutor(t, q.b(mode))
					run := newGatedTask(t, 0)
					hr := submitGated(t, e, q.keys[0], "run", run, groupconc.SubmitOptions{Cost: 2})
					synctest.Wait()
					var cs []*call
					for range 2 {
						cs = append(cs, en.start(t, t.Context(), e, q.keys[1], "big", 5, succeed))
					}
					for _, c := range cs {
						assert.False(t, c.done(), "a costly task took more than one slot")
					}
					over, err := groupconc.SubmitWith(t.Context(), e, q.keys[2], "over", succeed, groupconc.SubmitOptions{Cost: 1})
					require.NoError(t, err)
					requireRejected(t, over, q.layer) // two tasks fill two slots
					run.Release()
					for _, c := range cs {
						st, err := c.status()
						assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
					}
					quiesce(t, e, append(handles(cs...), hr, over)...)
				})
			})
		})
	}
}
