package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Shutdown does not resume a paused group. Its running task finishes; a
// caller blocked on its full queue gets ErrClosed; its waiting tasks, and
// those under it, are cancelled when Shutdown's ctx ends, never run.
func TestShutdownLeavesAPausedGroupPausedTillItsCtxEnds(t *testing.T) {
	forEachEntry(t, entries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
		synctest.Test(t, func(t *testing.T) {
			e := groupconc.New(mustBuild(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(3).DefaultQueueThresholdPerGroup(2)))
			run := newGatedTask(t, 1)
			hr := submitGated(t, e, "a", "run", run, groupconc.SubmitOptions{})
			submit(t, t.Context(), e, "a/kid", "first", succeed).Wait()
			synctest.Wait()
			pause(t, e, "a", true)
			ran := make(chan string, 8)
			fn := func(id string) groupconc.Task[int] {
				return func(context.Context) (int, error) { ran <- id; return 1, nil }
			}
			c := en.start(t, t.Context(), e, "a", "c", 0, fn("c"))
			fill := submit(t, t.Context(), e, "a", "fill", fn("fill"))
			kid := submit(t, t.Context(), e, "a/kid", "kid", fn("kid"))
			blocked := submitBlocking(t.Context(), e, "a", "blocked", fn("blocked"), groupconc.SubmitOptions{})
			synctest.Wait()
			require.False(t, blocked.returned(), "a's queue of 2 is full")

			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			start := time.Now()
			shut := make(chan error)
			go func() { shut <- e.Shutdown(ctx) }()
			synctest.Wait()
			require.True(t, blocked.returned())
			assert.ErrorIs(t, blocked.err, groupconc.ErrClosed, "a blocked caller once Shutdown begins")
			time.Sleep(30 * time.Second) // fake clock
			assert.True(t, groupStats(t, e, "a").Paused, "Shutdown resumed the group")
			assert.True(t, groupStats(t, e, "a/kid").Paused)
			run.Release()
			synctest.Wait()
			assert.Equal(t, groupconc.StatusSuccess, doneResult(t, hr).Status, "a running task finishes")
			assert.Empty(t, ran, "a paused task ran during Shutdown")
			assert.False(t, c.done(), "cancelled before Shutdown's ctx ended")

			assert.ErrorIs(t, <-shut, context.DeadlineExceeded)
			assert.Equal(t, time.Minute, time.Since(start), "Shutdown returns when its ctx ends")
			for _, h := range []*groupconc.TaskHandle[int]{fill, kid} {
				assert.Equal(t, groupconc.StatusCancelled, h.Wait().Status, h.TaskID())
			}
			st, err := c.status()
			assert.Equal(t, groupconc.StatusCancelled, st, "%v", err)
			assert.Empty(t, ran, "a paused task ran")
		})
	})
}

// A paused group, and one under a paused ancestor, hold no share of the
// global cap under fair share: another tenant runs on all of it.
func TestPausedSubtreeHoldsNoShareOfTheGlobalCap(t *testing.T) {
	for _, paused := range []string{"acme", "acme/u1"} {
		t.Run(paused, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
				synctest.Test(t, func(t *testing.T) {
					e := newExecutor(t, builder().Isolation(mode).ParentSeparator("/").GlobalMaxInFlight(2).DefaultMaxConcurrencyPerGroup(5))
					quiesce(t, e, submit(t, t.Context(), e, "acme/u1", "first", succeed))
					pause(t, e, paused, true)
					var hs []*groupconc.TaskHandle[int]
					for range 3 {
						hs = append(hs, submit(t, t.Context(), e, "acme/u1", "w", succeed))
					}
					gate := make(chan struct{})
					var running gauge
					for range 4 {
						hs = append(hs, submit(t, t.Context(), e, "initech/x", "x", gated(gate, 1, &running)))
					}
					synctest.Wait()
					assert.EqualValues(t, 2, running.cur.Load(), "initech runs on the whole cap")
					assert.Equal(t, 2, e.Stats().GlobalInFlight)
					acme := groupStats(t, e, "acme")
					assert.Equal(t, [3]int{3, 0, 0}, [3]int{acme.Waiting, acme.WaitingGlobal, acme.InFlight}, "acme: waiting, for the cap, in flight")
					close(gate)
					pause(t, e, paused, false)
					quiesce(t, e, hs...)
				})
			})
		})
	}
}

// GroupStats.Paused is true for a paused group and every group under it,
// through GroupStats and AllGroupStats alike, and false elsewhere.
func TestPausedInStatsCoversTheSubtree(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/"))
			keys := []string{"a", "a/b", "a/b/c", "a/d", "x"}
			for _, k := range keys {
				quiesce(t, e, submit(t, t.Context(), e, k, "first", succeed))
			}
			check := func(want map[string]bool) {
				t.Helper()
				for _, k := range keys {
					assert.Equal(t, want[k], groupStats(t, e, k).Paused, "GroupStats(%q).Paused", k)
				}
				n := 0
				for gs := range e.AllGroupStats() {
					n++
					assert.Equal(t, want[gs.GroupKey], gs.Paused, "AllGroupStats %q", gs.GroupKey)
				}
				assert.Equal(t, len(keys), n)
			}
			pause(t, e, "a/b", true)
			check(map[string]bool{"a/b": true, "a/b/c": true})
			pause(t, e, "a", true)
			check(map[string]bool{"a": true, "a/b": true, "a/b/c": true, "a/d": true})
			pause(t, e, "a/b", false)
			check(map[string]bool{"a": true, "a/b": true, "a/b/c": true, "a/d": true})
			require.NoError(t, e.SetGroupOverride("a", groupconc.GroupOverride{}))
			check(map[string]bool{})
		})
	})
}

// Dropping the override resumes as Paused false does, and a Do running
// as the pause comes finishes.
func TestDroppingThePauseOverrideResumes(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode))
			k := newGatedTask(t, 7)
			running := goDo(t.Context(), e, "a", k.Fn, groupconc.SubmitOptions{})
			synctest.Wait()
			pause(t, e, "a", true)
			w := newGatedTask(t, 8)
			waiting := goDo(t.Context(), e, "a", w.Fn, groupconc.SubmitOptions{})
			k.Release()
			<-running.done
			assert.Equal(t, 7, running.v, "a running Do finishes")
			require.NoError(t, running.err)
			synctest.Wait()
			assert.False(t, w.started.Load())
			require.NoError(t, e.SetGroupOverride("a", groupconc.GroupOverride{}))
			synctest.Wait()
			assert.True(t, w.started.Load(), "dropping the override resumes at once")
			w.Release()
			<-waiting.done
			assert.Equal(t, 8, waiting.v)
		})
	})
}

// A paused group is never forgotten as idle, and keeps its parent; a group
// under a paused ancestor is forgotten like any other, and the ancestor
// stays paused.
func TestPauseAndIdleGroupsInATree(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").IdleGroupTTL(idleTTL))
			for _, k := range []string{"acme/u1", "acme/u2"} {
				quiesce(t, e, submit(t, t.Context(), e, k, "first", succeed))
			}
			pause(t, e, "acme/u1", true)
			time.Sleep(3 * idleTTL) // fake clock
			e.Stats()
			assert.ElementsMatch(t, []string{"acme", "acme/u1"}, idleKeys(e), "the paused child and its parent stay")

			pause(t, e, "acme", true)
			require.NoError(t, e.SetGroupOverride("acme/u1", groupconc.GroupOverride{}))
			time.Sleep(3 * idleTTL) // fake clock
			e.Stats()
			assert.Equal(t, []string{"acme"}, idleKeys(e), "the child under a paused parent is forgotten")
			assert.True(t, groupStats(t, e, "acme").Paused)
		})
	})
}

// Tasks accepted while paused are not turned away when the pause ends:
// not by a full ancestor's queue, which they did not wait in, nor (under
// IsolationOff) by the global one. They wait, and start in their order.
func TestResumedTasksAreNotTurnedAwayByAQueueTheyJoinLate(t *testing.T) {
	for _, paused := range []string{"acme", "acme/u1"} {
		t.Run(paused, func(t *testing.T) {
			forEachEntry(t, entries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
				synctest.Test(t, func(t *testing.T) {
					b := builder().Isolation(mode).ParentSeparator("/").GlobalMaxInFlight(1).
						PerGroupMaxConcurrency(map[string]int{"acme/u1": 5}).PerGroupQueueThreshold(map[string]int{"acme": 1})
					if mode == groupconc.IsolationOff {
						b.GlobalQueueThreshold(1)
					}
					e := newExecutor(t, b)
					quiesce(t, e, submit(t, t.Context(), e, "acme/u1", "first", succeed))
					pause(t, e, paused, true)
					var log startLog
					var cs []*call
					for _, id := range []string{"a", "b", "c"} {
						cs = append(cs, en.start(t, t.Context(), e, "acme/u1", id, 0, log.task(id)))
					}
					pause(t, e, paused, false)
					for _, c := range cs {
						st, err := c.status()
						assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
					}
					assert.Equal(t, []string{"a", "b", "c"}, log.order())
					quiesce(t, e, handles(cs...)...)
				})
			})
		})
	}
}

// Under RejectDiscardOldest a paused group's queue is full with its
// waiting tasks, those that waited for a global permit before the pause
// included: a newcomer displaces the oldest of them.
func TestPausedQueueUnderDiscardOldest(t *testing.T) {
	forEachEntry(t, entries[:2], func(t *testing.T, mode groupconc.IsolationMode, en entry) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e := newExecutor(t, builder().Isolation(mode).GlobalMaxInFlight(1).DefaultQueueThresholdPerGroup(2).
				RejectionPolicy(groupconc.RejectDiscardOldest).TaskLifecycleListener(rec))
			run := newGatedTask(t, 0)
			hr := submitGated(t, e, "b", "run", run, groupconc.SubmitOptions{})
			synctest.Wait()
			oldest := submit(t, t.Context(), e, "a", "oldest", succeed) // waits for the global permit
			synctest.Wait()
			pause(t, e, "a", true)
			next := submit(t, t.Context(), e, "a", "next", succeed)
			newer := en.start(t, t.Context(), e, "a", "newer", 0, succeed)
			requireDisplaced(t, oldest, rec)
			assert.False(t, next.IsDone() || newer.done(), "the others wait")
			assert.Equal(t, 2, groupStats(t, e, "a").Waiting)
			pause(t, e, "a", false)
			run.Release()
			st, err := newer.status()
			assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
			quiesce(t, e, append(handles(newer), hr, oldest, next)...)
		})
	})
}
