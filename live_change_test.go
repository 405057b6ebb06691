package groupconc_test

// A policy changed while tasks are in the middle of their walk: the state
// a task took at admission must not outlive the policy it was read from.

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

func TestIdleTTLTurnedOnNeverForgetsAGroupATaskIsEntering(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			// The listener holds the task between entering its group and
			// taking its first permit, while the TTL is turned on and runs out.
			hold := make(chan struct{})
			entered := make(chan struct{})
			l := groupconc.ListenerFuncs{Submitted: func(_, id string) {
				if id == "slow" {
					close(entered)
					<-hold
				}
			}}
			e := newExecutor(t, modeBuilder(mode).TaskLifecycleListener(l))
			var h *groupconc.TaskHandle[int]
			go func() { h, _ = groupconc.Submit(t.Context(), e, "a", "slow", succeed) }()
			<-entered
			upUpdate(t, e, modeBuilder(mode).TaskLifecycleListener(l).IdleGroupTTL(idleTTL))
			time.Sleep(3 * idleTTL)
			e.Stats() // forgets what is idle
			close(hold)
			synctest.Wait()
			require.NotNil(t, h)
			r := h.Wait()
			assert.Equal(t, groupconc.StatusSuccess, r.Status, "err %v", r.Err)
			quiesce(t, e, h)
		})
	})
}

func TestRaisedLimitLetsInACallerBlockedOnAQueueOfNoSlots(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, how := range []string{"UpdatePolicy", "override"} {
			t.Run(how, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					b := func(limit int) *groupconc.PolicyBuilder {
						return modeBuilder(mode).DefaultMaxConcurrencyPerGroup(limit).DefaultQueueThresholdPerGroup(0)
					}
					e := newExecutor(t, b(1))
					k := newGatedTask(t, 0)
					run := submit(t, t.Context(), e, "a", "run", k.Fn)
					synctest.Wait()
					c1 := submitBlocking(t.Context(), e, "a", "c1", succeed, groupconc.SubmitOptions{})
					c2 := submitBlocking(t.Context(), e, "a", "c2", succeed, groupconc.SubmitOptions{})
					synctest.Wait()
					require.False(t, c1.returned(), "a caller on a queue of no slots returned, want it blocked")
					if how == "UpdatePolicy" {
						upUpdate(t, e, b(3))
					} else {
						three := 3
						require.NoError(t, e.SetGroupOverride("a", groupconc.GroupOverride{MaxConcurrency: &three}))
					}
					synctest.Wait()
					require.True(t, c1.returned(), "the raised limit did not let the first caller in")
					require.True(t, c2.returned(), "the raised limit did not let the second caller in")
					require.NoError(t, c1.err)
					require.NoError(t, c2.err)
					assert.Equal(t, groupconc.StatusSuccess, c1.h.Wait().Status)
					assert.Equal(t, groupconc.StatusSuccess, c2.h.Wait().Status)
					k.Release()
					quiesce(t, e, run, c1.h, c2.h)
				})
			})
		}
	})
}

// turnedAwayLater returns an executor under policy b (IsolationOff, a
// global cap of 3) with a task "x" of group "a" waiting for a global
// permit, and its gated task of "z" whose end hands x that permit: x then
// finds a's queue full (a runs one task, "y" waits in its only slot).
func turnedAwayLater(t *testing.T, b *groupconc.PolicyBuilder) (e *groupconc.GroupExecutor, z *gatedTask, hs []*groupconc.TaskHandle[int]) {
	t.Helper()
	e = newExecutor(t, b)
	k, z := newGatedTask(t, 0), newGatedTask(t, 0)
	hs = append(hs, submit(t, t.Context(), e, "a", "run", k.Fn), submit(t, t.Context(), e, "z", "z", z.Fn))
	synctest.Wait()
	hs = append(hs, submit(t, t.Context(), e, "a", "y", succeed))
	synctest.Wait()
	hs = append(hs, submit(t, t.Context(), e, "a", "x", succeed))
	synctest.Wait()
	t.Cleanup(k.Release)
	return e, z, hs
}

func TestTheRejectionPolicyInForceDecidesWhetherATaskDisplacesAnother(t *testing.T) {
	b := func(r groupconc.RejectionPolicy) *groupconc.PolicyBuilder {
		return builder().GlobalMaxInFlight(3).DefaultMaxConcurrencyPerGroup(1).
			DefaultQueueThresholdPerGroup(1).RejectionPolicy(r)
	}
	t.Run("switched to DiscardOldest", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e, z, hs := turnedAwayLater(t, b(groupconc.RejectDiscard))
			upUpdate(t, e, b(groupconc.RejectDiscardOldest))
			z.Release()
			synctest.Wait()
			assert.Equal(t, groupconc.StatusRejected, statusIfDone(hs[2]), "y, the oldest, should be displaced")
			assert.False(t, hs[3].IsDone(), "x was turned away (%v), want it in y's slot", statusIfDone(hs[3]))
		})
	})
	t.Run("switched from DiscardOldest", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e, z, hs := turnedAwayLater(t, b(groupconc.RejectDiscardOldest))
			upUpdate(t, e, b(groupconc.RejectDiscard))
			z.Release()
			synctest.Wait()
			assert.False(t, hs[2].IsDone(), "y was displaced (%v) under RejectDiscard", statusIfDone(hs[2]))
			assert.Equal(t, groupconc.StatusRejected, statusIfDone(hs[3]), "x should be turned away")
		})
	})
}

func TestDiscardOldestFindsSlotHoldersBehindTasksALoweredGlobalCapSentBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := func(global int) *groupconc.PolicyBuilder {
			return builder().GlobalMaxInFlight(global).GlobalQueueThreshold(2).
				DefaultMaxConcurrencyPerGroup(1).RejectionPolicy(groupconc.RejectDiscardOldest)
		}
		e := newExecutor(t, b(3))
		k := newGatedTask(t, 0)
		// "a" runs one task; two more of "a" hold global permits and wait
		// for a's own limit.
		hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "a", "run", k.Fn)}
		for _, id := range []string{"a1", "a2"} {
			hs = append(hs, submit(t, t.Context(), e, "a", id, succeed))
		}
		synctest.Wait()
		// Lowered to 1: a1 and a2 go back to the head of the global line,
		// holding no global slot; b1 and b2 then fill the global queue.
		upUpdate(t, e, b(1))
		for _, id := range []string{"b1", "b2"} {
			hs = append(hs, submit(t, t.Context(), e, "b", id, succeed))
		}
		synctest.Wait()
		n := submit(t, t.Context(), e, "c", "n", succeed)
		synctest.Wait()
		assert.False(t, n.IsDone(), "the newcomer was turned away (%v), want b1 displaced", statusIfDone(n))
		assert.Equal(t, groupconc.StatusRejected, statusIfDone(hs[3]), "b1, the oldest slot holder, should be displaced")
		k.Release()
		quiesce(t, e, append(hs, n)...)
	})
}

// A policy updated with every limit as it was sends no task back. b holds
// a permit of an earlier layer as it waits at the next one (Off: g's
// bulkhead, waiting for g's limit; fair share: g's limit, waiting for the
// global one). c, of the highest priority, waits for that earlier permit.
// Sent back, b would wait behind c, and c would start first.
func TestAPolicyUpdatedAtItsLimitsSendsNoTaskBack(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			b := modeBuilder(mode).DefaultMaxInFlightPerGroup(2).DefaultMaxConcurrencyPerGroup(1)
			if mode == groupconc.IsolationFairShare {
				b = modeBuilder(mode).GlobalMaxInFlight(1).DefaultMaxConcurrencyPerGroup(2)
			}
			e := newExecutor(t, b)
			g := upNewGated()
			g.submit(t, e, "g", "a")
			g.submit(t, e, "g", "b")
			g.submitWith(t, e, "g", "c", groupconc.SubmitOptions{Priority: groupconc.PriorityHighest})
			synctest.Wait()
			require.Equal(t, []string{"a"}, g.starts.list())
			upUpdate(t, e, b)
			g.release("a")
			assert.True(t, g.started("b"), "b holds its place: %v", g.starts.list())
			assert.False(t, g.started("c"))
			g.finish(t, e)
		})
	})
}

// Under IsolationOff a lowered global cap sends w, which holds a global
// permit and waits for g's, back to the head of the global line. w starts
// first, and y of g still waits there: its group's stats still find it.
func TestAGroupsOldestWaitAfterALoweredCapSentItsTaskBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := func(global int) *groupconc.PolicyBuilder {
			return modeBuilder(groupconc.IsolationOff).GlobalMaxInFlight(global).DefaultMaxConcurrencyPerGroup(1)
		}
		e := newExecutor(t, b(2))
		g := upNewGated()
		g.submit(t, e, "g", "a")
		g.submit(t, e, "g", "w") // holds a global permit, waits for g's
		synctest.Wait()
		time.Sleep(time.Second)  // fake clock
		g.submit(t, e, "g", "y") // waits for a global permit
		synctest.Wait()
		upUpdate(t, e, b(1))
		time.Sleep(time.Second) // fake clock
		g.release("a")
		require.Equal(t, []string{"a", "w"}, g.starts.list())
		s := groupStats(t, e, "g")
		assert.Equal(t, 1, s.WaitingGlobal)
		assert.Equal(t, time.Second, s.OldestWait, "y's wait")
		g.finish(t, e)
	})
}
