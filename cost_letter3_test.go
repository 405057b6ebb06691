package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A costly task that the tasks behind it wait for leaves its line: it is
// cancelled, its group is paused, shut down or evicted. The cheaper task
// behind it then starts at once on the permits that are free, as in
// semaphore.Weighted (golang/go#37852): nothing else frees one.
func TestCostWaitedForLeavesAndTheNextStarts(t *testing.T) {
	for _, at := range []string{"global", "parent"} {
		for _, leave := range []string{"cancel", "pause", "shutdown", "evict"} {
			t.Run(at+"/"+leave, func(t *testing.T) {
				forEachEntry(t, costEntries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
					synctest.Test(t, func(t *testing.T) { costLeaves(t, mode, en, at, leave) })
				})
			})
		}
	}
}

func costLeaves(t *testing.T, mode groupconc.IsolationMode, en entry, at, leave string) {
	b := builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(10).GlobalMaxInFlight(4)
	x, a, c := "x", "a", "c"
	if at == "parent" {
		b = builder().Isolation(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(10).
			PerGroupMaxConcurrency(map[string]int{"acme": 4})
		x, a, c = "acme/x", "acme/a", "acme/c"
	}
	e := newExecutor(t, b)
	hold := newGatedTask(t, 0)
	hh := submitGated(t, e, x, "hold", hold, groupconc.SubmitOptions{Cost: 3})
	synctest.Wait()
	require.True(t, hold.started.Load())

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	costly, cheap := newGatedTask(t, 1), newGatedTask(t, 2)
	cc := en.start(t, ctx, e, a, "costly", 3, costly.Fn)
	ch := en.start(t, t.Context(), e, c, "cheap", 1, cheap.Fn)
	require.False(t, costly.started.Load() || cheap.started.Load(), "cheap waits behind costly")
	switch leave {
	case "cancel":
		cancel()
	case "pause":
		pause(t, e, a, true)
	case "shutdown":
		e.ShutdownGroup(a)
	case "evict":
		e.EvictGroup(a)
	}
	synctest.Wait()
	assert.True(t, cheap.started.Load(), "1 permit free and nobody waits ahead of cheap")
	if leave == "pause" {
		assert.False(t, costly.started.Load())
		pause(t, e, a, false)
	}
	hold.Release()
	costly.Release()
	cheap.Release()
	st, err := ch.status()
	assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
	st, err = cc.status()
	if leave == "pause" {
		assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
	} else {
		assert.Equal(t, groupconc.StatusCancelled, st, "%v", err)
	}
	quiesce(t, e, append(handles(cc, ch), hh)...)
}

// An override lowered below a waiting task's cost never makes it wait
// forever, and the task runs alone at that limit.
func TestCostAboveAnOverrideLoweredWhileItWaits(t *testing.T) {
	forEachEntry(t, costEntries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).DefaultMaxConcurrencyPerGroup(4))
			run := newGatedTask(t, 0)
			hr := submitGated(t, e, "g", "run", run, groupconc.SubmitOptions{Cost: 2})
			synctest.Wait()
			big := newGatedTask(t, 1)
			cb := en.start(t, t.Context(), e, "g", "big", 3, big.Fn)
			require.False(t, big.started.Load())
			one := 1
			require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{MaxConcurrency: &one}))
			run.Release()
			synctest.Wait()
			require.True(t, big.started.Load(), "a cost of 3 waits forever under an override of 1")
			assert.Equal(t, 1, groupStats(t, e, "g").RunningCost, "the whole limit")
			small := newGatedTask(t, 2)
			hs := submitGated(t, e, "g", "small", small, groupconc.SubmitOptions{})
			synctest.Wait()
			assert.False(t, small.started.Load(), "it runs alone")
			big.Release()
			synctest.Wait()
			assert.True(t, small.started.Load())
			small.Release()
			st, err := cb.status()
			assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
			quiesce(t, e, append(handles(cb), hr, hs)...)
		})
	})
}

// A limit lowered under a costly task waiting at its parent's limit sends
// it back to its own line: the cheaper task behind it at the parent's
// limit starts at once on the permit free there.
func TestCostSentBackByALoweredLimitLetsTheNextStart(t *testing.T) {
	forEachEntry(t, costEntries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(10).
				PerGroupMaxConcurrency(map[string]int{"acme": 4}))
			hold := newGatedTask(t, 0)
			hh := submitGated(t, e, "acme/x", "hold", hold, groupconc.SubmitOptions{Cost: 3})
			synctest.Wait()
			costly, cheap := newGatedTask(t, 1), newGatedTask(t, 2)
			cc := en.start(t, t.Context(), e, "acme/a", "costly", 3, costly.Fn)
			ch := en.start(t, t.Context(), e, "acme/c", "cheap", 1, cheap.Fn)
			require.False(t, costly.started.Load() || cheap.started.Load(), "cheap waits behind costly at acme")
			two := 2
			require.NoError(t, e.SetGroupOverride("acme/a", groupconc.GroupOverride{MaxConcurrency: &two}))
			synctest.Wait()
			assert.True(t, cheap.started.Load(), "1 of acme's 4 free, and costly went back to its own line")
			assert.False(t, costly.started.Load())
			cheap.Release()
			hold.Release()
			synctest.Wait()
			assert.True(t, costly.started.Load(), "a cost of 3 under its own limit of 2")
			costly.Release()
			for _, c := range []*call{cc, ch} {
				st, err := c.status()
				assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
			}
			quiesce(t, e, append(handles(cc, ch), hh)...)
		})
	})
}

// Under RejectDiscardOldest a costly waiting task displaced by a newcomer
// leaves its line: the cheaper task behind it starts on the permit free.
func TestCostDisplacedLetsTheNextStart(t *testing.T) {
	forEachEntry(t, costEntries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).DefaultMaxConcurrencyPerGroup(4).DefaultQueueThresholdPerGroup(2).
				RejectionPolicy(groupconc.RejectDiscardOldest))
			hold := newGatedTask(t, 0)
			hh := submitGated(t, e, "g", "hold", hold, groupconc.SubmitOptions{Cost: 3})
			synctest.Wait()
			costly, cheap, newer := newGatedTask(t, 1), newGatedTask(t, 2), newGatedTask(t, 3)
			cc := en.start(t, t.Context(), e, "g", "costly", 3, costly.Fn)
			ch := en.start(t, t.Context(), e, "g", "cheap", 1, cheap.Fn)
			require.False(t, costly.started.Load() || cheap.started.Load(), "cheap waits behind costly")
			hn := submitGated(t, e, "g", "newer", newer, groupconc.SubmitOptions{Priority: en.opts.Priority})
			synctest.Wait()
			st, _ := cc.status()
			require.Equal(t, groupconc.StatusRejected, st, "the oldest is displaced")
			assert.True(t, cheap.started.Load(), "1 of 4 free, and nobody waits ahead of cheap")
			hold.Release()
			cheap.Release()
			newer.Release()
			st, err := ch.status()
			assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
			quiesce(t, e, append(handles(cc, ch), hh, hn)...)
		})
	})
}

// Under fair share, shares are in permits at every level: two tenants of
// equal weight under the global cap, and two users of equal weight under
// their tenant's own limit, one with cost-4 tasks and one with cost-1
// tasks, hold equal permits.
func TestCostFairShareInPermitsInATree(t *testing.T) {
	for _, at := range []string{"global", "parent"} {
		t.Run(at, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := builder().Isolation(groupconc.IsolationFairShare).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(20)
				heavy, light := "acme/u1", "initech/u1"
				if at == "global" {
					b.GlobalMaxInFlight(8)
				} else {
					b.PerGroupMaxConcurrency(map[string]int{"acme": 8})
					light = "acme/u2"
				}
				e := newExecutor(t, b)
				top := "acme"
				if at == "global" {
					top = "x"
				}
				hold := newGatedTask(t, 0)
				hh := submitGated(t, e, top+"/hold", "", hold, groupconc.SubmitOptions{Cost: 8})
				synctest.Wait()
				var ks []*gatedTask
				hs := []*groupconc.TaskHandle[int]{hh}
				for range 4 {
					for _, g := range []struct {
						key  string
						cost int
					}{{heavy, 4}, {light, 1}, {light, 1}, {light, 1}, {light, 1}} {
						k := newGatedTask(t, 0)
						ks = append(ks, k)
						hs = append(hs, submitGated(t, e, g.key, "", k, groupconc.SubmitOptions{Cost: g.cost}))
					}
				}
				hold.Release()
				synctest.Wait()
				h, l := groupStats(t, e, heavy), groupStats(t, e, light)
				assert.Equal(t, [2]int{1, 4}, [2]int{h.Running, l.Running}, "tasks running, heavy and light")
				if at == "global" {
					assert.Equal(t, 8, e.Stats().GlobalInFlight)
				} else {
					assert.Equal(t, [2]int{4, 4}, [2]int{h.RunningCost, l.RunningCost}, "permits held, heavy and light")
				}
				for _, k := range ks {
					k.Release()
				}
				quiesce(t, e, hs...)
			})
		})
	}
}

// WaitingGlobal counts tasks waiting for the global cap, whatever their
// cost, and they hold none of it while they wait there.
func TestCostWaitingGlobalCountsTasks(t *testing.T) {
	forEachEntry(t, costEntries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(10))
			run := newGatedTask(t, 0)
			hr := submitGated(t, e, "g", "run", run, groupconc.SubmitOptions{Cost: 3})
			synctest.Wait()
			c1 := en.start(t, t.Context(), e, "g", "c1", 3, succeed)
			c2 := en.start(t, t.Context(), e, "g", "c2", 2, succeed)
			gs := groupStats(t, e, "g")
			assert.Equal(t, [4]int{1, 3, 2, 2}, [4]int{gs.Running, gs.RunningCost, gs.Waiting, gs.WaitingGlobal}, "Running, RunningCost, Waiting, WaitingGlobal")
			assert.Equal(t, 3, e.Stats().GlobalInFlight)
			run.Release()
			for _, c := range []*call{c1, c2} {
				st, err := c.status()
				assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
			}
			quiesce(t, e, append(handles(c1, c2), hr)...)
		})
	})
}

// The shares a parent's fair choice weighs go back to nothing as the tasks
// handed its permits end: a child that waited often is not held back
// later, and the first to wait is served first.
func TestParentShareForgetsEndedTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().Isolation(groupconc.IsolationFairShare).ParentSeparator("/").
			DefaultMaxConcurrencyPerGroup(10).PerGroupMaxConcurrency(map[string]int{"acme": 1}))
		var hs []*groupconc.TaskHandle[int]
		for range 3 { // u1's tasks wait at acme's limit, and are handed it
			k := newGatedTask(t, 0)
			k.Release()
			hs = append(hs, submitGated(t, e, "acme/u1", "", k, groupconc.SubmitOptions{Cost: 2}))
		}
		quiesce(t, e, hs...)
		x := newGatedTask(t, 0)
		hx := submitGated(t, e, "acme/x", "x", x, groupconc.SubmitOptions{})
		synctest.Wait()
		var log startLog
		h1 := submit(t, t.Context(), e, "acme/u1", "u1", log.task("u1"))
		h2 := submit(t, t.Context(), e, "acme/u2", "u2", log.task("u2"))
		synctest.Wait()
		x.Release()
		quiesce(t, e, hx, h1, h2)
		assert.Equal(t, []string{"u1", "u2"}, log.order(), "neither holds anything: the first to wait goes first")
	})
}
