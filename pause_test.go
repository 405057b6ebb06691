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

// pause sets or clears key's pause through an override.
func pause(t *testing.T, e *groupconc.GroupExecutor, key string, on bool) {
	t.Helper()
	require.NoError(t, e.SetGroupOverride(key, groupconc.GroupOverride{Paused: &on}))
}

func TestPausedGroupStartsNothingAndResumesInArrivalOrder(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode))
			k := newGatedTask(t, 0)
			var log startLog
			hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "a", "run", k.Fn)}
			hs = append(hs, submit(t, t.Context(), e, "a", "w1", log.task("w1")))
			synctest.Wait()
			pause(t, e, "a", true) // w1 waited before the pause
			for _, id := range []string{"w2", "w3"} {
				hs = append(hs, submit(t, t.Context(), e, "a", id, log.task(id)))
			}
			hs = append(hs, submitPrio(t, e, "a", "high", groupconc.PriorityHigh, log.task("high")))
			k.Release() // the running task finishes; nothing starts
			synctest.Wait()
			gs := groupStats(t, e, "a")
			assert.True(t, gs.Paused)
			assert.Equal(t, [3]int{0, 4, 0}, [3]int{gs.Running, gs.Waiting, gs.WaitingGlobal}, "running, waiting, waiting for the global cap")
			assert.Empty(t, log.order(), "started while paused")

			pause(t, e, "a", false)
			quiesce(t, e, hs...)
			assert.Equal(t, []string{"high", "w1", "w2", "w3"}, log.order(), "by priority, then arrival")
			assert.False(t, groupStats(t, e, "a").Paused)
		})
	})
}

func TestPausedGroupHoldsNoGlobalPermitSoOthersRun(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).GlobalMaxInFlight(2).DefaultMaxConcurrencyPerGroup(1))
			k := newGatedTask(t, 0)
			hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "a", "a1", k.Fn)}
			// Under IsolationOff a2 holds the second global permit while it
			// waits for a's own limit.
			hs = append(hs, submit(t, t.Context(), e, "a", "a2", succeed))
			synctest.Wait()
			b1 := newGatedTask(t, 0)
			hs = append(hs, submit(t, t.Context(), e, "b", "b1", b1.Fn))
			synctest.Wait()
			pause(t, e, "a", true)
			synctest.Wait()
			assert.True(t, b1.started.Load() || mode == groupconc.IsolationFairShare, "b1 waits while a2 holds a global permit")
			b2 := newGatedTask(t, 0)
			hs = append(hs, submit(t, t.Context(), e, "c", "c1", b2.Fn))
			k.Release() // a1 ends: its global permit goes to b, not to a2
			synctest.Wait()
			assert.True(t, b1.started.Load() && b2.started.Load(), "others run on the global cap the paused group left")
			assert.False(t, hs[1].IsDone(), "a2 started while its group was paused")
			st := e.Stats()
			assert.Equal(t, 2, st.GlobalInFlight)
			pause(t, e, "a", false)
			b1.Release()
			b2.Release()
			quiesce(t, e, hs...)
		})
	})
}

func TestPausedGroupKeepsItsThresholdAndBlock(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).DefaultQueueThresholdPerGroup(1))
			quiesce(t, e, submit(t, t.Context(), e, "a", "first", succeed))
			pause(t, e, "a", true)
			w1 := submit(t, t.Context(), e, "a", "w1", succeed)
			w2 := submit(t, t.Context(), e, "a", "w2", succeed)
			synctest.Wait()
			assert.False(t, w1.IsDone(), "w1 waits in its slot")
			requireRejected(t, w2, "group")
			c := submitBlocking(t.Context(), e, "a", "c", succeed, groupconc.SubmitOptions{})
			synctest.Wait()
			require.False(t, c.returned(), "Block waits for the paused group's slot")
			pause(t, e, "a", false)
			synctest.Wait()
			require.True(t, c.returned())
			require.NoError(t, c.err)
			quiesce(t, e, w1, w2, c.h)
			assert.Equal(t, groupconc.StatusSuccess, c.h.Wait().Status)
		})
	})
}

func TestPausedGroupUnderCallerRunsRunsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().DefaultQueueThresholdPerGroup(0).RejectionPolicy(groupconc.RejectCallerRuns))
		quiesce(t, e, submit(t, t.Context(), e, "a", "first", succeed))
		pause(t, e, "a", true)
		ran := false
		h := submit(t, t.Context(), e, "a", "x", func(context.Context) (int, error) { ran = true; return 1, nil })
		_, err := h.Await(t.Context())
		var re *groupconc.RejectedError
		assert.ErrorAs(t, err, &re, "rejected as under RejectAbort")
		assert.Equal(t, groupconc.StatusRejected, h.Wait().Status)
		assert.False(t, ran)
		_, err = groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) { ran = true; return 1, nil }, groupconc.SubmitOptions{})
		assert.ErrorAs(t, err, &re, "pause wins over caller-runs for Do too")
		assert.False(t, ran)
	})
}

func TestPausedGroupIsNeverForgottenAndStaysPausedAcrossUpdatePolicy(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			b := func() *groupconc.PolicyBuilder { return modeBuilder(mode).IdleGroupTTL(idleTTL) }
			e := newExecutor(t, b())
			quiesce(t, e, submit(t, t.Context(), e, "a", "first", succeed))
			pause(t, e, "a", true)
			time.Sleep(10 * idleTTL)
			require.Equal(t, 1, e.Stats().Groups, "a paused group is not idle")
			upUpdate(t, e, b().DefaultMaxConcurrencyPerGroup(3))
			h := submit(t, t.Context(), e, "a", "w", succeed)
			synctest.Wait()
			assert.False(t, h.IsDone(), "the override stays above the new policy")
			assert.True(t, groupStats(t, e, "a").Paused)
			require.NoError(t, e.SetGroupOverride("a", groupconc.GroupOverride{}))
			quiesce(t, e, h)
		})
	})
}

func TestShutdownDoesNotResumeAPausedGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(mustBuild(t, builder()))
		quiesce(t, e, submit(t, t.Context(), e, "a", "first", succeed))
		pause(t, e, "a", true)
		h := submit(t, t.Context(), e, "a", "w", succeed)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		assert.ErrorIs(t, e.Shutdown(ctx), context.DeadlineExceeded)
		r := h.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
	})
}

// A blocked caller of a paused group handed a slot of the global queue
// waits in the pause line holding its own group's slot, as a parked task
// does. The global slot goes on to the next blocked caller, of another
// group, whose task then runs: pausing one group never holds back another.
func TestPausedGroupsBlockedCallerPassesItsGlobalSlotOn(t *testing.T) {
	for _, at := range []string{"group", "parent"} {
		t.Run(at, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, builder().ParentSeparator("/").GlobalMaxInFlight(1).GlobalQueueThreshold(1))
				paused, x, w, c := "a", "a", "a", "a"
				if at == "parent" {
					paused, x, w, c = "t", "t/a", "t/b", "t/a"
				}
				run := newGatedTask(t, 0)
				hx := submitGated(t, e, x, "x", run, groupconc.SubmitOptions{})
				synctest.Wait()
				hw := submit(t, t.Context(), e, w, "w", succeed) // the global queue is full
				ca := submitBlocking(t.Context(), e, c, "ca", succeed, groupconc.SubmitOptions{})
				synctest.Wait()
				cu := submitBlocking(t.Context(), e, "u", "cu", succeed, groupconc.SubmitOptions{})
				synctest.Wait()
				require.Equal(t, 2, e.Stats().Blocked)

				pause(t, e, paused, true) // w leaves the global queue, and ca's task takes the slot
				synctest.Wait()
				require.True(t, ca.returned(), "ca's task is accepted, and waits in the pause line")
				require.True(t, cu.returned(), "the global slot went on to u's caller")
				run.Release()
				assert.Equal(t, groupconc.StatusSuccess, cu.h.Wait().Status, "u is not paused")

				pause(t, e, paused, false)
				quiesce(t, e, hx, hw, ca.h, cu.h)
			})
		})
	}
}

// A pause gives back what its group's waiting tasks hold of an ancestor's
// limit. A caller of a sibling blocked on the ancestor's queue of no slots
// waits for that very limit, and no task's end is to wake it. So the pause
// wakes it, and its task goes on at once: pausing one group never holds
// back another. Under fair share w of t/a holds t's permit as it waits for
// the global one, which z holds. Under IsolationOff it holds t's bulkhead
// permit as it waits for t/a's, which y holds.
func TestPausingAGroupLetsInASiblingsCallerBlockedOnTheirParentsQueue(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			b := modeBuilder(mode).ParentSeparator("/").PerGroupQueueThreshold(map[string]int{"t": 0})
			first := "x" // z takes the global permit
			if mode == groupconc.IsolationFairShare {
				b = b.GlobalMaxInFlight(1).PerGroupMaxConcurrency(map[string]int{"t": 1})
			} else {
				b = b.PerGroupMaxInFlight(map[string]int{"t": 2}).PerGroupMaxConcurrency(map[string]int{"t": groupconc.Unlimited})
				first = "t/a" // y takes t/a's permit, and one of t's bulkhead
			}
			e := newExecutor(t, b)
			y := newGatedTask(t, 0)
			hy := submitGated(t, e, first, "y", y, groupconc.SubmitOptions{})
			hw := submit(t, t.Context(), e, "t/a", "w", succeed) // holds t's last permit, and waits
			c := submitBlocking(t.Context(), e, "t/b", "c", succeed, groupconc.SubmitOptions{})
			synctest.Wait()
			require.False(t, c.returned(), "c's caller waits for t's permit: %+v", e.Stats())
			paused := true
			require.NoError(t, e.SetGroupOverride("t/a", groupconc.GroupOverride{Paused: &paused}))
			synctest.Wait()
			require.True(t, c.returned(), "c's caller is let in as the pause gives back t's permit")
			require.NoError(t, c.err)
			y.Release()
			assert.Equal(t, groupconc.StatusSuccess, c.h.Wait().Status)
			require.NoError(t, e.SetGroupOverride("t/a", groupconc.GroupOverride{}))
			quiesce(t, e, hy, hw, c.h)
		})
	})
}
