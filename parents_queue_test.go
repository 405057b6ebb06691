package groupconc_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// An ancestor's queue threshold counts only the tasks waiting for that
// ancestor's limit: a task waiting for its own group's limit takes no slot
// of its tenant's queue, even one of threshold 0.
func TestAnAncestorsQueueCountsOnlyTasksWaitingForItsLimit(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(1).
				PerGroupMaxConcurrency(map[string]int{"acme": 3}).PerGroupQueueThreshold(map[string]int{"acme": 0}))
			ks, hs := submitEach(t, e, "acme/u1", "acme/u1", "acme/u1")
			synctest.Wait()
			assert.True(t, ks[0].started.Load())
			requireWaiting(t, hs[1], ks[1])
			requireWaiting(t, hs[2], ks[2])
			pos, ok := hs[1].Position()
			require.True(t, ok)
			assert.Equal(t, "acme/u1", pos.Group, "it waits for its own group's limit")
			ks[0].Release()
			synctest.Wait()
			assert.True(t, ks[1].started.Load())
			releaseAll(t, e, ks, hs)
		})
	})
}

// A task accepted while it waited for its own group's limit is never
// rejected later for finding its tenant's queue full: rejections happen
// inside Submit. Here the tenant's limit was lowered meanwhile.
func TestAnAcceptedTaskIsNeverRejectedByAnAncestorsQueueLater(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			limits := func(acme int) *groupconc.PolicyBuilder {
				return modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(5).
					PerGroupMaxConcurrency(map[string]int{"acme": acme, "acme/u1": 1}).
					PerGroupQueueThreshold(map[string]int{"acme": 0})
			}
			e := newExecutor(t, limits(2))
			ks, hs := submitEach(t, e, "acme/u1", "acme/u2", "acme/u1")
			synctest.Wait()
			require.Equal(t, 2, startedCount(ks[:2]...))
			requireWaiting(t, hs[2], ks[2])
			require.NoError(t, e.UpdatePolicy(mustBuild(t, limits(1))))
			ks[0].Release()
			synctest.Wait()
			requireWaiting(t, hs[2], ks[2]) // now at acme's full limit
			pos, ok := hs[2].Position()
			require.True(t, ok)
			assert.Equal(t, "acme", pos.Group)
			ks[1].Release()
			synctest.Wait()
			assert.True(t, ks[2].started.Load())
			releaseAll(t, e, ks, hs)
		})
	})
}

// A grandparent's full queue turns a task away with ReasonGroupQueueFull
// and the task's own group, wherever that shows: the handle's error, the
// listener, a rejection handler, Do's error, and each level's counters.
func TestAGrandparentsFullQueueNamesTheTasksOwnGroup(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			var heard, handled []string
			l := groupconc.ListenerFuncs{Rejected: func(g, _, reason string) {
				mu.Lock()
				defer mu.Unlock()
				heard = append(heard, g+" "+reason)
			}}
			b := modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(5).TaskLifecycleListener(l).
				PerGroupMaxConcurrency(map[string]int{"org": 1}).PerGroupQueueThreshold(map[string]int{"org": 1})
			e := newExecutor(t, b)
			ks, hs := submitEach(t, e, "org/acme/u1", "org/beta/u1", "org/acme/u2")
			synctest.Wait()
			requireWaiting(t, hs[1], ks[1])
			re := requireRejected(t, hs[2], "group")
			assert.Equal(t, groupconc.ReasonGroupQueueFull, re.Reason)
			assert.Equal(t, "org/acme/u2", re.GroupKey)

			_, err := groupconc.Do(context.Background(), e, "org/beta/u2", succeed, groupconc.SubmitOptions{})
			require.ErrorAs(t, err, &re)
			assert.Equal(t, groupconc.RejectedError{GroupKey: "org/beta/u2", TaskID: re.TaskID, Reason: groupconc.ReasonGroupQueueFull}, *re)

			h := func(_ context.Context, r *groupconc.Rejection) (any, error) {
				mu.Lock()
				defer mu.Unlock()
				handled = append(handled, r.GroupKey+" "+r.Reason)
				return 7, nil
			}
			require.NoError(t, e.UpdatePolicy(mustBuild(t, b.RejectionHandler(h))))
			hh := submit(t, context.Background(), e, "org/acme/u3", "h", succeed)
			assert.Equal(t, 7, hh.Wait().Value)

			mu.Lock()
			assert.Equal(t, []string{"org/acme/u2 group_queue_full", "org/beta/u2 group_queue_full", "org/acme/u3 group_queue_full"}, heard)
			assert.Equal(t, []string{"org/acme/u3 group_queue_full"}, handled)
			mu.Unlock()
			assert.Equal(t, uint64(1), groupStats(t, e, "org/acme/u2").Rejected)
			assert.Equal(t, uint64(1), groupStats(t, e, "org/acme").Rejected)
			assert.Equal(t, uint64(2), groupStats(t, e, "org").Rejected)
			assert.Equal(t, uint64(1), groupStats(t, e, "org").Succeeded, "the handler's success")
			releaseAll(t, e, ks, hs)
		})
	})
}

// A task accepted while it waited for its own group's limit is not turned
// away when it moves on to its tenant's queue and finds the slot just
// handed to a blocked caller: both wait, and both run.
func TestAnAcceptedTaskKeepsWaitingWhenABlockedCallerTakesTheAncestorsSlot(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(5).
				PerGroupMaxConcurrency(map[string]int{"acme": 1, "acme/u1": 1}).
				PerGroupQueueThreshold(map[string]int{"acme": 1}))
			ks, hs := submitEach(t, e, "acme/u2", "acme/u1", "acme/u1")
			synctest.Wait()
			require.True(t, ks[0].started.Load())
			requireWaiting(t, hs[1], ks[1]) // holds u1's permit, waits for acme's
			requireWaiting(t, hs[2], ks[2]) // waits for u1's
			blocked := newGatedTask(t, 9)
			got := make(chan *groupconc.TaskHandle[int], 1)
			go func() {
				h, err := groupconc.SubmitWith(context.Background(), e, "acme/u3", "blocked", blocked.Fn, groupconc.SubmitOptions{Block: true})
				assert.NoError(t, err)
				got <- h
			}()
			synctest.Wait()
			require.Equal(t, 1, groupStats(t, e, "acme").Blocked)
			require.True(t, hs[1].Cancel())
			hb := <-got
			synctest.Wait()
			requireWaiting(t, hs[2], ks[2])
			requireWaiting(t, hb, blocked)
			assert.Equal(t, 2, groupStats(t, e, "acme").Waiting, "one over acme's threshold of 1")
			late := submit(t, context.Background(), e, "acme/u4", "late", succeed)
			assert.Equal(t, groupconc.ReasonGroupQueueFull, requireRejected(t, late, "group").Reason, "new tasks are turned away meanwhile")
			ks[0].Release()
			synctest.Wait()
			assert.Equal(t, 1, startedCount(ks[2], blocked), "acme's limit of 1")
			ks[2].Release()
			blocked.Release()
			quiesce(t, e, append(hs, hb)...)
			assert.Equal(t, groupconc.StatusSuccess, hs[2].Wait().Status)
			assert.Equal(t, groupconc.StatusSuccess, hb.Wait().Status)
		})
	})
}

// An ancestor's queue threshold counts tasks, not cost: two costly tasks
// take its two slots, and a third task is turned away.
func TestAnAncestorsQueueCountsTasksNotCost(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(5).
				PerGroupMaxConcurrency(map[string]int{"acme": 4}).PerGroupQueueThreshold(map[string]int{"acme": 2}))
			first, a, b := newGatedTask(t, 0), newGatedTask(t, 1), newGatedTask(t, 2)
			h0 := submitGated(t, e, "acme/u1", "", first, groupconc.SubmitOptions{Cost: 4})
			ha := submitGated(t, e, "acme/u2", "", a, groupconc.SubmitOptions{Cost: 3})
			hb := submitGated(t, e, "acme/u3", "", b, groupconc.SubmitOptions{Cost: 2})
			synctest.Wait()
			requireWaiting(t, ha, a)
			requireWaiting(t, hb, b)
			late := submit(t, context.Background(), e, "acme/u4", "late", succeed)
			requireRejected(t, late, "group")
			releaseAll(t, e, []*gatedTask{first, a, b}, []*groupconc.TaskHandle[int]{h0, ha, hb})
		})
	})
}

// A caller blocked on the global queue for a task of a parent's subtree
// gives up with ErrGroupShutdown or ErrGroupEvicted when the parent is
// stopped.
func TestStoppingAParentEndsACallerBlockedOnTheGlobalQueue(t *testing.T) {
	for name, c := range map[string]struct {
		stop  func(*groupconc.GroupExecutor, string)
		cause error
	}{
		"ShutdownGroup": {(*groupconc.GroupExecutor).ShutdownGroup, groupconc.ErrGroupShutdown},
		"EvictGroup":    {(*groupconc.GroupExecutor).EvictGroup, groupconc.ErrGroupEvicted},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, builder().ParentSeparator("/").GlobalMaxInFlight(1).GlobalQueueThreshold(0))
				k := newGatedTask(t, 0)
				h := submitGated(t, e, "other", "", k, groupconc.SubmitOptions{})
				_, err := groupconc.Do(context.Background(), e, "org/acme/u1", succeed, groupconc.SubmitOptions{})
				require.ErrorIs(t, err, groupconc.ErrRejected, "the global queue takes none")
				errs := make(chan error, 1)
				go func() {
					_, err := groupconc.SubmitWith(context.Background(), e, "org/acme/u1", "blocked", succeed, groupconc.SubmitOptions{Block: true})
					errs <- err
				}()
				synctest.Wait()
				require.Equal(t, 1, e.Stats().Blocked)
				c.stop(e, "org")
				assert.ErrorIs(t, <-errs, c.cause)
				k.Release()
				quiesce(t, e, h)
			})
		})
	}
}

// A task accepted in its user's queue that moves on to its tenant's full
// queue waits there past the threshold and keeps its user's slot until it
// starts. Else the slot it left would let one more task wait: t/u/x's
// tasks waiting would exceed the thresholds of its chain (0 + 1 + 0).
func TestATaskPastATenantsThresholdKeepsTheSlotItWasAcceptedOn(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			limits := func(tenant int) *groupconc.PolicyBuilder {
				return modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(5).
					DefaultQueueThresholdPerGroup(0).
					PerGroupMaxConcurrency(map[string]int{"t": tenant, "t/u": 1}).
					PerGroupQueueThreshold(map[string]int{"t": 0, "t/u": 1})
			}
			e := newExecutor(t, limits(2))
			ks, hs := submitEach(t, e, "t/u/x", "t/v", "t/u/x")
			synctest.Wait()
			requireWaiting(t, hs[2], ks[2]) // for u's limit, in u's queue
			require.NoError(t, e.UpdatePolicy(mustBuild(t, limits(1))))
			ks[0].Release()
			synctest.Wait()
			requireWaiting(t, hs[2], ks[2])
			assert.Equal(t, "t", position(t, hs[2]).Group, "past t's threshold of 0")
			late := submit(t, context.Background(), e, "t/u/x", "late", succeed)
			requireRejected(t, late, "group")
			assert.Equal(t, 1, groupStats(t, e, "t/u/x").Waiting)
			releaseAll(t, e, ks, append(hs, late))
		})
	})
}

// The same holds where the walk waits at the tenant's bulkhead before its
// own concurrency limit: a task accepted in the tenant's queue that finds
// its own queue full waits there past its threshold, and keeps the
// tenant's slot. So the tenant's subtree has one task waiting, not two.
func TestATaskPastItsOwnThresholdKeepsItsTenantsSlot(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(5).
				DefaultQueueThresholdPerGroup(0).
				PerGroupMaxConcurrency(map[string]int{"t/u": 1}).PerGroupMaxInFlight(map[string]int{"t": 2}).
				PerGroupQueueThreshold(map[string]int{"t": 1}))
			ks, hs := submitEach(t, e, "t/u", "t/v", "t/u")
			synctest.Wait()
			requireWaiting(t, hs[2], ks[2]) // for t's bulkhead, in t's queue
			ks[1].Release()
			synctest.Wait()
			requireWaiting(t, hs[2], ks[2])
			assert.Equal(t, "t/u", position(t, hs[2]).Group, "past u's threshold of 0")
			late := submit(t, context.Background(), e, "t/w", "late", succeed)
			requireRejected(t, late, "group")
			assert.Equal(t, 1, groupStats(t, e, "t").Waiting)
			releaseAll(t, e, ks, append(hs, late))
		})
	})
}

// A blocked caller's task is accepted on the slot its walk stopped at, and
// then walks on from there. If that limit freed meanwhile, the task goes
// on to its tenant's limit. It waits there, past the tenant's full queue,
// on the slot it was accepted on: Block never turns a task away for a full
// queue. Here the limit frees as the listener hears of the task.
func TestABlockedCallersTaskWalkingOnPastAFreedLimitWaitsAtItsTenant(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			r := newGatedTask(t, 0)
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(4).
				PerGroupMaxConcurrency(map[string]int{"t": 2, "t/a": 1}).
				PerGroupQueueThreshold(map[string]int{"t": 1}).
				TaskLifecycleListener(groupconc.ListenerFuncs{Submitted: func(_, id string) {
					if id == "late" {
						r.Release()
						synctest.Wait()
					}
				}}))
			s, w, late := newGatedTask(t, 1), newGatedTask(t, 2), newGatedTask(t, 3)
			hs := submitGated(t, e, "t", "s", s, groupconc.SubmitOptions{})
			hr := submitGated(t, e, "t/a", "r", r, groupconc.SubmitOptions{})
			hw := submitGated(t, e, "t/b", "w", w, groupconc.SubmitOptions{Cost: 2}) // waits at t's limit, on t's one slot
			synctest.Wait()
			requireWaiting(t, hw, w)
			h := submitGated(t, e, "t/a", "late", late, groupconc.SubmitOptions{Block: true}) // stops at t/a's limit, held by r
			synctest.Wait()
			requireWaiting(t, h, late) // r ended: late holds t/a's permit, and waits behind w for t's
			s.Release()
			synctest.Wait()
			requireWaiting(t, h, late)
			w.Release()
			synctest.Wait()
			assert.True(t, late.started.Load(), "late starts once w ended")
			late.Release()
			assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status)
			quiesce(t, e, hs, hr, hw, h)
		})
	})
}

// A user's task that ends gives its global permit back to a caller
// blocked on the global queue of no slots, as a flat group's task does.
func TestAUsersEndingTaskLetsInACallerBlockedOnTheGlobalQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().ParentSeparator("/").GlobalMaxInFlight(1).GlobalQueueThreshold(0))
		k := newGatedTask(t, 0)
		h := submitGated(t, e, "t/u", "", k, groupconc.SubmitOptions{})
		b := submitBlocking(t.Context(), e, "other", "b", succeed, groupconc.SubmitOptions{})
		synctest.Wait()
		require.False(t, b.returned(), "b's caller returned, want it blocked")
		k.Release()
		synctest.Wait()
		require.True(t, b.returned(), "b's caller is still blocked with the global permit free")
		require.NoError(t, b.err)
		assert.Equal(t, groupconc.StatusSuccess, b.h.Wait().Status)
		quiesce(t, e, h, b.h)
	})
}
