package groupconc_test

// RejectDiscardOldest in a tenant's queue held past its threshold. A task
// accepted in its own group's queue moves on to its tenant's and waits
// there even if that queue is full. It keeps its own group's slot until it
// starts. A new task must not take the slot it holds past the threshold:
// it would wait past every threshold of its chain.

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// keptPolicy: acme runs acme/u2's task and acme/u1's first, then its limit
// is lowered to 1. So acme/u1's second task, accepted in u1's queue, moves
// on to acme's full queue when the first ends.
func keptPolicy(mode groupconc.IsolationMode, acme, acmeQueue int) *groupconc.PolicyBuilder {
	return modeBuilder(mode).ParentSeparator("/").RejectionPolicy(groupconc.RejectDiscardOldest).
		DefaultMaxConcurrencyPerGroup(5).DefaultQueueThresholdPerGroup(0).
		PerGroupMaxConcurrency(map[string]int{"acme": acme, "acme/u1": 1}).
		PerGroupQueueThreshold(map[string]int{"acme": acmeQueue, "acme/u1": 1})
}

// moveOnToAcme lowers acme's limit to 1 (policy) and ends u1's running
// task first. So u1's waiting task h, running k, moves on to acme's line.
func moveOnToAcme(t *testing.T, e *groupconc.GroupExecutor, policy *groupconc.PolicyBuilder, first *gatedTask, h *groupconc.TaskHandle[int], k *gatedTask) {
	t.Helper()
	require.NoError(t, e.UpdatePolicy(mustBuild(t, policy)))
	first.Release()
	synctest.Wait()
	requireWaiting(t, h, k)
	require.Equal(t, "acme", position(t, h).Group)
}

// With acme's threshold 0, a task of another user finds acme full and
// holding only the slot u1's task kept. It is turned away: displacing
// that task would make room past the threshold, not within it.
func TestDiscardOldestTakesNoSlotKeptPastATenantsThreshold(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, keptPolicy(mode, 2, 0))
			ks, hs := submitEach(t, e, "acme/u2", "acme/u1", "acme/u1")
			synctest.Wait()
			require.Equal(t, 2, startedCount(ks[:2]...))
			requireWaiting(t, hs[2], ks[2])                                 // for u1's limit, in u1's queue
			moveOnToAcme(t, e, keptPolicy(mode, 1, 0), ks[1], hs[2], ks[2]) // past acme's threshold

			late := submit(t, context.Background(), e, "acme/u3", "late", succeed)
			synctest.Wait()
			assert.Equal(t, groupconc.ReasonGroupQueueFull, requireRejected(t, late, "group").Reason)
			requireWaiting(t, hs[2], ks[2])
			assert.Equal(t, 0, groupStats(t, e, "acme/u3").Waiting, "u3's chain allows none to wait")

			ks[0].Release()
			synctest.Wait()
			assert.True(t, ks[2].started.Load())
			releaseAll(t, e, ks, append(hs, late))
		})
	})
}

// With acme's threshold 1, acme's queue holds the kept task and one task
// that took a slot within the threshold. A new task displaces the latter,
// though the kept task is older: only that slot is room within the
// threshold.
func TestDiscardOldestPassesOverASlotKeptPastATenantsThreshold(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, keptPolicy(mode, 2, 1))
			ks, hs := submitEach(t, e, "acme/u2", "acme/u1")
			time.Sleep(time.Second) // fake clock: each task below is younger
			kept := newGatedTask(t, 2)
			hk := submitGated(t, e, "acme/u1", "", kept, groupconc.SubmitOptions{})
			time.Sleep(time.Second) // fake clock
			within := newGatedTask(t, 3)
			hw := submitGated(t, e, "acme/u3", "", within, groupconc.SubmitOptions{})
			synctest.Wait()
			requireWaiting(t, hk, kept)   // for u1's limit
			requireWaiting(t, hw, within) // for acme's, in its queue's one slot
			moveOnToAcme(t, e, keptPolicy(mode, 1, 1), ks[1], hk, kept)
			require.Equal(t, 2, groupStats(t, e, "acme").Waiting, "one past acme's threshold")

			late, hl := submitDisplacing(t, e, "acme/u4", 4, hw, "the task holding the slot within acme's threshold")
			requireWaiting(t, hk, kept)
			ks[0].Release()
			synctest.Wait()
			assert.Equal(t, 1, startedCount(kept, late), "acme's limit of 1")
			kept.Release()
			late.Release()
			releaseAll(t, e, ks, append(hs, hk, hw, hl))
		})
	})
}

// A task that moved on to its tenant's line keeps the slot of its own
// group's queue. So that queue is full while none of its own lines has a
// waiter. A new task of the group displaces that task, the oldest holding
// one of the queue's slots, rather than being turned away.
func TestDiscardOldestDisplacesATaskThatMovedOnHoldingItsGroupsSlot(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, keptPolicy(mode, 2, 1))
			ks, hs := submitEach(t, e, "acme/u2", "acme/u1", "acme/u1")
			synctest.Wait()
			requireWaiting(t, hs[2], ks[2])                                 // for u1's limit, in u1's queue
			moveOnToAcme(t, e, keptPolicy(mode, 1, 1), ks[1], hs[2], ks[2]) // within acme's threshold

			late, hl := submitDisplacing(t, e, "acme/u1", 3, hs[2], "the task holding u1's one slot")
			assert.Equal(t, 1, groupStats(t, e, "acme/u1").Waiting)
			ks[0].Release()
			synctest.Wait()
			assert.True(t, late.started.Load())
			late.Release()
			releaseAll(t, e, ks, append(hs, hl))
		})
	})
}

// A group's queue held past its lowered threshold by tasks that wait
// holding no other slot: a new task displaces the oldest of them. That
// makes no room past the threshold, as it takes the victim's own slot.
func TestDiscardOldestInAQueuePastItsLoweredThreshold(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			policy := func(queue int) *groupconc.PolicyBuilder {
				return modeBuilder(mode).RejectionPolicy(groupconc.RejectDiscardOldest).
					DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(queue)
			}
			e := newExecutor(t, policy(2))
			ks, hs := submitEach(t, e, "g", "g", "g")
			synctest.Wait()
			requireWaiting(t, hs[1], ks[1])
			requireWaiting(t, hs[2], ks[2])
			require.NoError(t, e.UpdatePolicy(mustBuild(t, policy(1))))

			late, hl := submitDisplacing(t, e, "g", 3, hs[1], "the oldest waiting task")
			requireWaiting(t, hs[2], ks[2])
			assert.Equal(t, 2, groupStats(t, e, "g").Waiting)
			ks[0].Release()
			ks[2].Release()
			late.Release()
			releaseAll(t, e, ks, append(hs, hl))
		})
	})
}

// A task of a paused group waits in its pause line holding its group's
// slot. Resumed, it keeps that slot as it takes one of the full global
// queue past its threshold. Once the queue is back within its threshold
// (the younger waiter there was cancelled), that task is the oldest
// holding a global slot, and a new task that finds the global queue full
// displaces it.
func TestDiscardOldestDisplacesAResumedTaskHoldingTwoSlotsWithinTheThreshold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().RejectionPolicy(groupconc.RejectDiscardOldest).
			GlobalMaxInFlight(1).GlobalQueueThreshold(1).DefaultMaxConcurrencyPerGroup(5))
		quiesce(t, e, submit(t, t.Context(), e, "g", "first", succeed))
		pause(t, e, "g", true)
		ks, hs := submitEach(t, e, "h", "g") // h's runs, g's waits paused
		time.Sleep(time.Second)              // fake clock: k's is younger
		k := newGatedTask(t, 2)
		hk := submitGated(t, e, "k", "", k, groupconc.SubmitOptions{})
		synctest.Wait()
		require.True(t, ks[0].started.Load())
		pause(t, e, "g", false)
		synctest.Wait()
		requireWaiting(t, hs[1], ks[1])
		require.True(t, hk.Cancel())
		synctest.Wait()

		late, hl := submitDisplacing(t, e, "m", 3, hs[1], "the oldest holding a global slot")
		releaseAll(t, e, append(ks, k, late), append(hs, hk, hl))
	})
}

// submitDisplacing submits a task of key, the youngest by a second of the
// fake clock, and requires it to displace the waiting task of victim (why
// names that task) and to wait in its place.
func submitDisplacing(t *testing.T, e *groupconc.GroupExecutor, key string, id int, victim *groupconc.TaskHandle[int], why string) (*gatedTask, *groupconc.TaskHandle[int]) {
	t.Helper()
	time.Sleep(time.Second) // fake clock
	late := newGatedTask(t, id)
	hl := submitGated(t, e, key, "", late, groupconc.SubmitOptions{})
	synctest.Wait()
	requireDoneDisplaced(t, victim, why)
	requireWaiting(t, hl, late)
	return late, hl
}
