package groupconc_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Each test here checks one sentence of the Pause paragraph, and of its
// details, through every entry that sentence applies to.

// A paused group accepts new tasks and they wait; its running tasks
// finish; a resume starts what can start at once.
func TestPauseAcceptsEveryEntryAndResumeStartsIt(t *testing.T) {
	forEachEntry(t, entries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).DefaultMaxConcurrencyPerGroup(2))
			run := newGatedTask(t, 1)
			hr := submitGated(t, e, "a", "run", run, groupconc.SubmitOptions{})
			synctest.Wait()
			pause(t, e, "a", true)
			k := newGatedTask(t, 2)
			c := en.start(t, t.Context(), e, "a", "new", 0, k.Fn)
			synctest.Wait()
			assert.False(t, k.started.Load() || c.done(), "started while paused")
			run.Release()
			synctest.Wait()
			assert.Equal(t, groupconc.StatusSuccess, doneResult(t, hr).Status, "the running task finishes")
			assert.False(t, k.started.Load(), "started while paused")
			assert.Equal(t, 1, groupStats(t, e, "a").Waiting)

			pause(t, e, "a", false)
			synctest.Wait()
			assert.True(t, k.started.Load(), "a resume starts what can start at once")
			k.Release()
			st, err := c.status()
			assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
			quiesce(t, e, handles(c)...)
		})
	})
}

// A paused group's waiting tasks hold no permit of an ancestor: its
// sibling runs on the parent's bulkhead and concurrency they left.
func TestPausedChildHoldsNoPermitOfItsParent(t *testing.T) {
	forEachEntry(t, entries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(1).
				PerGroupMaxConcurrency(map[string]int{"acme": 2}).PerGroupMaxInFlight(map[string]int{"acme": 2}))
			run := newGatedTask(t, 1)
			hr := submitGated(t, e, "acme/u1", "run", run, groupconc.SubmitOptions{})
			synctest.Wait()
			// Under IsolationOff w holds acme's second bulkhead permit while
			// it waits for u1's own limit.
			w := newGatedTask(t, 2)
			hw := submitGated(t, e, "acme/u1", "w", w, groupconc.SubmitOptions{})
			synctest.Wait()
			pause(t, e, "acme/u1", true)
			more := newGatedTask(t, 3)
			cm := en.start(t, t.Context(), e, "acme/u1", "more", 0, more.Fn)
			run.Release()
			synctest.Wait()
			sib := newGatedTask(t, 4)
			cs := en.start(t, t.Context(), e, "acme/u2", "sib", 0, sib.Fn)
			synctest.Wait()
			assert.True(t, sib.started.Load(), "the sibling waits for what the paused group left")
			acme := groupStats(t, e, "acme")
			assert.Equal(t, [3]int{1, 2, 1}, [3]int{acme.Running, acme.Waiting, acme.InFlight}, "acme: running, waiting, in flight")
			sib2 := newGatedTask(t, 5)
			cs2 := en.start(t, t.Context(), e, "acme/u3", "sib2", 0, sib2.Fn)
			synctest.Wait()
			assert.True(t, sib2.started.Load(), "a second sibling fills acme's limit of 2")
			assert.False(t, w.started.Load() || more.started.Load(), "started while paused")

			sib.Release()
			sib2.Release()
			synctest.Wait() // both gone: w and more race for nothing they free
			pause(t, e, "acme/u1", false)
			synctest.Wait()
			first := w // it came first
			if en.opts.Priority == groupconc.PriorityHigh {
				first = more
			}
			assert.True(t, first.started.Load(), "by priority, then arrival")
			w.Release()
			more.Release()
			for _, c := range []*call{cm, cs, cs2} {
				st, err := c.status()
				assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
			}
			quiesce(t, e, append(handles(cm, cs, cs2), hr, hw)...)
		})
	})
}

// A paused group's waiting tasks hold no global permit and no slot of the
// global queue, count against their own group's threshold and are not in
// WaitingGlobal.
func TestPausedTasksLeaveTheGlobalLineAndItsQueue(t *testing.T) {
	forEachEntry(t, entries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
		synctest.Test(t, func(t *testing.T) {
			b := builder().Isolation(mode).GlobalMaxInFlight(1).DefaultQueueThresholdPerGroup(3)
			if mode == groupconc.IsolationOff {
				b.GlobalQueueThreshold(1)
			}
			e := newExecutor(t, b)
			run := newGatedTask(t, 1)
			hr := submitGated(t, e, "b", "run", run, groupconc.SubmitOptions{})
			synctest.Wait()
			w := newGatedTask(t, 2)
			hw := submitGated(t, e, "a", "w", w, groupconc.SubmitOptions{})
			synctest.Wait()
			require.Equal(t, 1, groupStats(t, e, "a").WaitingGlobal)
			pause(t, e, "a", true)
			synctest.Wait()
			var cs []*call
			for range 2 {
				cs = append(cs, en.start(t, t.Context(), e, "a", "more", 0, succeed))
			}
			synctest.Wait()
			a := groupStats(t, e, "a")
			assert.Equal(t, [2]int{3, 0}, [2]int{a.Waiting, a.WaitingGlobal}, "a: waiting, waiting for a global permit")
			assert.True(t, a.Paused)
			for _, c := range cs {
				assert.False(t, c.done(), "a paused task was turned away, or ran")
			}
			over, err := groupconc.Submit(t.Context(), e, "a", "over", succeed)
			require.NoError(t, err)
			requireRejected(t, over, "group") // the group's threshold of 3

			other := newGatedTask(t, 3)
			ho := submitGated(t, e, "c", "other", other, groupconc.SubmitOptions{})
			synctest.Wait()
			requireWaiting(t, ho, other) // in the global queue slot a left
			assert.Equal(t, 1, groupStats(t, e, "c").WaitingGlobal)
			if mode == groupconc.IsolationOff {
				full, err := groupconc.Submit(t.Context(), e, "d", "full", succeed)
				require.NoError(t, err)
				requireRejected(t, full, "global")
			}

			run.Release()
			synctest.Wait()
			assert.True(t, other.started.Load(), "the freed global permit goes past the paused group")
			other.Release()
			pause(t, e, "a", false)
			w.Release()
			for _, c := range cs {
				st, err := c.status()
				assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
			}
			quiesce(t, e, append(handles(cs...), hr, hw, ho, over)...)
		})
	})
}

// After a resume, waiting tasks keep their arrival order: those that
// waited at different layers before the pause and those that came during
// it.
func TestPauseResumeKeepsArrivalOrderAcrossLayers(t *testing.T) {
	forEachEntry(t, entries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).GlobalMaxInFlight(3).DefaultMaxInFlightPerGroup(2))
			run := newGatedTask(t, 0)
			hr := submitGated(t, e, "a", "run", run, groupconc.SubmitOptions{})
			var log startLog
			var cs []*call
			ids := []string{"w1", "w2", "w3", "w4", "w5", "w6"}
			for i, id := range ids {
				if i == 3 {
					synctest.Wait()
					pause(t, e, "a", true)
				}
				ce := entry{name: "Submit"}
				if i >= 3 && !en.do { // Do's arrival order is the caller's, so only SubmitWith tasks come paused
					ce = en
				}
				cs = append(cs, ce.start(t, t.Context(), e, "a", id, 0, log.task(id)))
				synctest.Wait()
			}
			run.Release()
			synctest.Wait()
			require.Empty(t, log.order(), "started while paused")
			pause(t, e, "a", false)
			for _, c := range cs {
				c.status()
			}
			want := ids
			if en.opts.Priority == groupconc.PriorityHigh {
				want = []string{"w4", "w5", "w6", "w1", "w2", "w3"}
			}
			assert.Equal(t, want, log.order())
			quiesce(t, e, append(handles(cs...), hr)...)
		})
	})
}

// After a resume of a parent, its subtree's tasks keep their arrival
// order at its limit.
func TestPausedParentResumesItsSubtreeInArrivalOrder(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, tenants(mode).PerGroupMaxConcurrency(map[string]int{"acme": 1}))
			quiesce(t, e, submit(t, t.Context(), e, "acme", "first", succeed))
			pause(t, e, "acme", true)
			var log startLog
			var hs []*groupconc.TaskHandle[int]
			for i, key := range []string{"acme/u1", "acme/u2", "acme/u1", "acme/u2", "acme"} {
				id := string(rune('a' + i))
				hs = append(hs, submit(t, t.Context(), e, key, id, log.task(id)))
			}
			synctest.Wait()
			for _, key := range []string{"acme", "acme/u1", "acme/u2"} {
				gs := groupStats(t, e, key)
				assert.True(t, gs.Paused, key)
				assert.Zero(t, gs.WaitingGlobal, key)
			}
			pause(t, e, "acme", false)
			quiesce(t, e, hs...)
			got := log.order()
			if mode == groupconc.IsolationOff {
				assert.Equal(t, []string{"a", "b", "c", "d", "e"}, got, "arrival order at acme's limit")
				return
			}
			// Under fair share the fair choice decides among the children;
			// each child's tasks keep their order.
			assert.Less(t, slices.Index(got, "a"), slices.Index(got, "c"), "u1's tasks: %v", got)
			assert.Less(t, slices.Index(got, "b"), slices.Index(got, "d"), "u2's tasks: %v", got)
		})
	})
}

// Under RejectCallerRuns a paused group's turned-away task does not run:
// it ends REJECTED as under RejectAbort, however it came and however it
// was turned away (a full queue, or a Block wait past MaxWait).
func TestPausedGroupUnderCallerRunsRejectsEveryEntry(t *testing.T) {
	for _, key := range []string{"a", "a/child"} {
		t.Run(key, func(t *testing.T) {
			forEachEntry(t, entries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
				synctest.Test(t, func(t *testing.T) {
					rec := newRecorder()
					e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultQueueThresholdPerGroup(0).
						RejectionPolicy(groupconc.RejectCallerRuns).TaskLifecycleListener(rec))
					quiesce(t, e, submit(t, t.Context(), e, key, "first", succeed))
					pause(t, e, "a", true)
					if en.opts.Block {
						en.opts.MaxWait = time.Second // a threshold of 0: the Block waits, then is turned away
					}
					ran := false
					c := en.start(t, t.Context(), e, key, "x", 0, func(context.Context) (int, error) { ran = true; return 1, nil })
					if en.opts.Block {
						synctest.Wait()
						assert.False(t, c.done(), "a Block call waits for a slot")
						time.Sleep(2 * time.Second) // fake clock: past MaxWait
					}
					st, err := c.status()
					assert.Equal(t, groupconc.StatusRejected, st, "%v", err)
					var re *groupconc.RejectedError
					assert.ErrorAs(t, err, &re)
					assert.False(t, ran, "a paused group's task ran as the caller's")
					if h := c.handle(); h != nil && c.d == nil {
						_, err := h.Await(t.Context())
						assert.ErrorAs(t, err, &re, "Await's error, as under RejectAbort")
						assert.Equal(t, []string{evSubmitted, evRejected}, rec.Events(key, "x"))
					}
					assert.Equal(t, uint64(1), groupStats(t, e, key).Rejected)
				})
			})
		})
	}
}

// A group paused after a threshold turned its task away, as the task's
// goroutine begins, still runs nothing under RejectCallerRuns: the task
// ends REJECTED as under RejectAbort.
func TestGroupPausedAsItsTurnedAwayTaskGoesOnRunsNothing(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		e := newExecutor(t, modeBuilder(mode).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).
			RejectionPolicy(groupconc.RejectCallerRuns))
		release := make(chan struct{})
		first := submit(t, t.Context(), e, "a", "first", func(context.Context) (int, error) { <-release; return 0, nil })
		paused, on := make(chan error, 1), true
		groupconc.OnRunRejected(t, func(key string) { // off the test's goroutine: no require (pause)
			paused <- e.SetGroupOverride(key, groupconc.GroupOverride{Paused: &on})
		})
		ran := false
		h := submit(t, t.Context(), e, "a", "x", func(context.Context) (int, error) { ran = true; return 1, nil })
		require.NoError(t, <-paused)
		_, err := h.Await(t.Context())
		var re *groupconc.RejectedError
		assert.ErrorAs(t, err, &re, "Await's error, as under RejectAbort")
		assert.Equal(t, groupconc.StatusRejected, h.Wait().Status)
		assert.False(t, ran, "a paused group's task ran as the caller's")
		close(release)
		first.Wait()
	})
}
