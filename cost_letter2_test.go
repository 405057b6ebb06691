package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Under fair share a cheaper task of another group does not overtake a
// costly task once the fair choice has fallen on it, at the global cap and
// at a parent's limit; the costly task stays chosen until it starts.
func TestCostChosenIsNotOvertakenByAnotherGroup(t *testing.T) {
	for _, at := range []string{"global", "parent"} {
		t.Run(at, func(t *testing.T) {
			forEachEntry(t, costEntries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
				if mode != groupconc.IsolationFairShare {
					t.Skip("the fair choice is fair share's")
				}
				synctest.Test(t, func(t *testing.T) {
					b := builder().Isolation(groupconc.IsolationFairShare).DefaultMaxConcurrencyPerGroup(10).GlobalMaxInFlight(4)
					x, a, c, late := "x", "a", "c", "late"
					if at == "parent" {
						b = builder().Isolation(groupconc.IsolationFairShare).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(10).
							PerGroupMaxConcurrency(map[string]int{"acme": 4})
						x, a, c, late = "acme/x", "acme/a", "acme/c", "acme/late"
					}
					e := newExecutor(t, b)
					var xs []*gatedTask
					var hs []*groupconc.TaskHandle[int]
					for range 3 {
						k := newGatedTask(t, 0)
						xs = append(xs, k)
						hs = append(hs, submitGated(t, e, x, "", k, groupconc.SubmitOptions{}))
					}
					synctest.Wait()
					costly, cheap, later := newGatedTask(t, 1), newGatedTask(t, 2), newGatedTask(t, 3)
					cc := en.start(t, t.Context(), e, a, "costly", 3, costly.Fn)
					ch := en.start(t, t.Context(), e, c, "cheap", 1, cheap.Fn)
					assert.False(t, costly.started.Load() || cheap.started.Load(), "one permit of 4 free")
					xs[0].Release()
					synctest.Wait()
					cl := en.start(t, t.Context(), e, late, "later", 1, later.Fn)
					assert.False(t, cheap.started.Load() || later.started.Load(), "a cheaper group overtook the chosen costly task")
					xs[1].Release()
					synctest.Wait()
					assert.True(t, costly.started.Load(), "3 free")
					assert.False(t, cheap.started.Load() || later.started.Load(), "3+1 held of 4")
					xs[2].Release()
					synctest.Wait()
					assert.True(t, cheap.started.Load(), "the next in the fair order")
					costly.Release()
					cheap.Release()
					later.Release()
					for _, c := range []*call{cc, ch, cl} {
						st, err := c.status()
						assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
					}
					quiesce(t, e, append(handles(cc, ch, cl), hs...)...)
				})
			})
		})
	}
}

// Under fair share a group's share is measured in permits, with weights:
// a group of cost-4 tasks of weight 2 holds twice the permits of a group
// of cost-1 tasks of weight 1.
func TestCostFairShareInPermitsByWeight(t *testing.T) {
	forEachEntry(t, costEntries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
		if mode != groupconc.IsolationFairShare {
			t.Skip("shares are fair share's")
		}
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(groupconc.IsolationFairShare).DefaultMaxConcurrencyPerGroup(20).
				GlobalMaxInFlight(12).PerGroupWeight(map[string]int{"heavy": 2}))
			hold := newGatedTask(t, 0)
			hh := submitGated(t, e, "hold", "", hold, groupconc.SubmitOptions{Cost: 12})
			synctest.Wait()
			var ks []*gatedTask
			var cs []*call
			for range 5 {
				for _, g := range []struct {
					key  string
					cost int
				}{{"heavy", 4}, {"light", 1}, {"light", 1}, {"light", 1}} {
					k := newGatedTask(t, 0)
					ks = append(ks, k)
					cs = append(cs, en.start(t, t.Context(), e, g.key, "", g.cost, k.Fn))
				}
			}
			hold.Release()
			synctest.Wait()
			heavy, light := groupStats(t, e, "heavy"), groupStats(t, e, "light")
			assert.Equal(t, [2]int{8, 4}, [2]int{heavy.RunningCost, light.RunningCost}, "permits held, heavy and light")
			assert.Equal(t, [2]int{2, 4}, [2]int{heavy.Running, light.Running}, "tasks running, heavy and light")
			assert.Equal(t, 12, e.Stats().GlobalInFlight)
			for _, k := range ks {
				k.Release()
			}
			for _, c := range cs {
				c.status()
			}
			quiesce(t, e, append(handles(cs...), hh)...)
		})
	})
}

// GlobalInFlight and RunningCost count permits; Running, Waiting and
// InFlight count tasks. Under IsolationOff a task waiting for its group's
// limit holds its cost of the global cap.
func TestCostInTheStats(t *testing.T) {
	forEachEntry(t, costEntries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).GlobalMaxInFlight(10).DefaultMaxConcurrencyPerGroup(4))
			run, next := newGatedTask(t, 1), newGatedTask(t, 2)
			cr := en.start(t, t.Context(), e, "g", "run", 3, run.Fn)
			cn := en.start(t, t.Context(), e, "g", "next", 2, next.Fn)
			require.True(t, run.started.Load())
			require.False(t, next.started.Load())
			gs := groupStats(t, e, "g")
			assert.Equal(t, [5]int{1, 3, 1, 2, 0}, [5]int{gs.Running, gs.RunningCost, gs.Waiting, gs.InFlight, gs.WaitingGlobal},
				"Running, RunningCost, Waiting, InFlight, WaitingGlobal")
			st := e.Stats()
			want := 3
			if mode == groupconc.IsolationOff {
				want = 5 // next holds its global permits while it waits for g's
			}
			assert.Equal(t, [3]int{1, 1, want}, [3]int{st.Running, st.Waiting, st.GlobalInFlight}, "Running, Waiting, GlobalInFlight")
			run.Release()
			synctest.Wait()
			gs = groupStats(t, e, "g")
			assert.Equal(t, [2]int{1, 2}, [2]int{gs.Running, gs.RunningCost})
			assert.Equal(t, 2, e.Stats().GlobalInFlight)
			next.Release()
			for _, c := range []*call{cr, cn} {
				c.status()
			}
			quiesce(t, e, handles(cr, cn)...)
		})
	})
}

// Cost 0 means 1: such tasks hold one permit each, as cost-1 tasks do.
func TestCostZeroMeansOne(t *testing.T) {
	forEachEntry(t, costEntries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).GlobalMaxInFlight(3).DefaultMaxConcurrencyPerGroup(2))
			ks := []*gatedTask{newGatedTask(t, 0), newGatedTask(t, 0), newGatedTask(t, 0)}
			var cs []*call
			for i, k := range ks {
				cs = append(cs, en.start(t, t.Context(), e, "g", "", i%2, k.Fn)) // costs 0, 1, 0
			}
			assert.True(t, ks[0].started.Load() && ks[1].started.Load(), "two of cost 0 and 1 fit in 2")
			assert.False(t, ks[2].started.Load())
			gs := groupStats(t, e, "g")
			assert.Equal(t, [2]int{2, 2}, [2]int{gs.Running, gs.RunningCost})
			want := 2
			if mode == groupconc.IsolationOff {
				want = 3 // the third holds its global permit while it waits
			}
			assert.Equal(t, want, e.Stats().GlobalInFlight)
			for _, k := range ks {
				k.Release()
			}
			for _, c := range cs {
				c.status()
			}
			quiesce(t, e, handles(cs...)...)
		})
	})
}

// A negative Cost is refused with ErrInvalidTask naming Cost, by every
// entry, before anything is counted or heard of.
func TestCostNegativeIsRefusedByEveryEntry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		e := newExecutor(t, builder().TaskLifecycleListener(rec))
		check := func(what string, err error) {
			t.Helper()
			assert.ErrorIs(t, err, groupconc.ErrInvalidTask, what)
			assert.ErrorContains(t, err, "Cost", what)
		}
		for _, en := range costEntries {
			o := en.opts
			o.Cost = -1
			if en.do {
				ran := false
				_, err := groupconc.Do(t.Context(), e, "g", func(context.Context) (int, error) { ran = true; return 0, nil }, o)
				check(en.name, err)
				assert.False(t, ran, en.name)
				continue
			}
			h, err := groupconc.SubmitWith(t.Context(), e, "g", "t", succeed, o)
			check(en.name, err)
			assert.Nil(t, h, en.name)
		}
		rs, err := groupconc.ExecuteAllWith(t.Context(), e, []groupconc.GroupTask[int]{{GroupKey: "g", TaskID: "t", Task: succeed}},
			groupconc.SubmitOptions{Cost: -3})
		check("ExecuteAllWith", err)
		assert.Empty(t, rs)
		st := e.Stats()
		assert.Equal(t, [2]uint64{0, 0}, [2]uint64{st.Submitted, st.Rejected}, "submitted, rejected")
		assert.Zero(t, st.Groups)
		assert.Zero(t, rec.Count(evSubmitted)+rec.Count(evRejected), "listener events")
	})
}

// A paused group's costly waiting task holds none of the global cap: under
// IsolationOff it gives back the permits it held waiting for its group's
// limit, and another group's costly task starts on them.
func TestCostPausedGroupHoldsNoGlobalPermits(t *testing.T) {
	forEachEntry(t, costEntries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).GlobalMaxInFlight(6).DefaultMaxConcurrencyPerGroup(3))
			run, waiting, other := newGatedTask(t, 1), newGatedTask(t, 2), newGatedTask(t, 3)
			hr := submitGated(t, e, "a", "run", run, groupconc.SubmitOptions{Cost: 3})
			synctest.Wait()
			cw := en.start(t, t.Context(), e, "a", "waiting", 3, waiting.Fn)
			pause(t, e, "a", true)
			synctest.Wait()
			assert.Equal(t, 3, e.Stats().GlobalInFlight, "the running task's permits alone")
			co := en.start(t, t.Context(), e, "b", "other", 3, other.Fn)
			assert.True(t, other.started.Load(), "3 of 6 free")
			assert.False(t, waiting.started.Load())
			pause(t, e, "a", false)
			run.Release()
			synctest.Wait()
			assert.True(t, waiting.started.Load())
			waiting.Release()
			other.Release()
			for _, c := range []*call{cw, co} {
				st, err := c.status()
				assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
			}
			quiesce(t, e, append(handles(cw, co), hr)...)
		})
	})
}
