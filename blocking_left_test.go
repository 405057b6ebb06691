package groupconc_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// TestACallerBlockedBehindACostlyWaiterIsLetInAsItLeaves: under fair share
// a caller blocked on a queue of no slots was turned away at the global
// cap, because a costly task of another group was chosen there and no
// task overtakes it. When that task leaves the line without a permit,
// the permit it waited for is free, and no task's end is coming to wake
// the caller. It is let in then, whichever way the task left: its group
// shut down, evicted or paused, or the task cancelled.
func TestACallerBlockedBehindACostlyWaiterIsLetInAsItLeaves(t *testing.T) {
	for _, how := range leaveWays {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, builder().Isolation(groupconc.IsolationFairShare).GlobalMaxInFlight(2).
					PerGroupQueueThreshold(map[string]int{"solo": 0}))
				r := newGatedTask(t, 0)
				hr := submitGated(t, e, "r", "r", r, groupconc.SubmitOptions{}) // holds one global permit
				synctest.Wait()
				hb, err := groupconc.SubmitWith(t.Context(), e, "big", "big", succeed, groupconc.SubmitOptions{Cost: 2})
				require.NoError(t, err)
				c := submitBlocking(t.Context(), e, "solo", "c", succeed, groupconc.SubmitOptions{})
				synctest.Wait()
				require.False(t, c.returned(), "c's caller waits behind big's costly task: %+v", e.Stats())

				leaveLine(t, e, how, "big", hb)
				requireLetIn(t, e, c, how, "big", hb, r)
				quiesce(t, e, hr, c.h)
			})
		})
	}
}

// leaveWays are the ways a waiting task leaves its line without a permit.
var leaveWays = []string{"ShutdownGroup", "EvictGroup", "Pause", "Cancel"}

// leaveLine makes h, a waiting task of key, leave its line the way how
// names.
func leaveLine(t *testing.T, e *groupconc.GroupExecutor, how, key string, h *groupconc.TaskHandle[int]) {
	t.Helper()
	switch how {
	case "ShutdownGroup":
		e.ShutdownGroup(key)
	case "EvictGroup":
		e.EvictGroup(key)
	case "Pause":
		pause(t, e, key, true)
	case "Cancel":
		h.Cancel()
	}
}

// requireLetIn checks that c's caller was let in as h left key's line.
// Then it releases r, whose task holds permits h needs, and checks that h
// ended as leaving that way ends it: a paused task runs once its group is
// resumed, the others are cancelled.
func requireLetIn(t *testing.T, e *groupconc.GroupExecutor, c *blocked, how, key string, h *groupconc.TaskHandle[int], r *gatedTask) {
	t.Helper()
	synctest.Wait()
	require.True(t, c.returned(), "c's caller is let in as %s's task leaves the line: %+v", key, e.Stats())
	require.NoError(t, c.err)
	assert.Equal(t, groupconc.StatusSuccess, c.h.Wait().Status)
	want := groupconc.StatusCancelled
	if how == "Pause" {
		want = groupconc.StatusSuccess
		pause(t, e, key, false)
	}
	r.Release()
	assert.Equal(t, want, h.Wait().Status)
}

// TestACallerBlockedBeforeItsQueueLostItsSlotsIsWatchedOnceTheWatcherLeaves:
// under fair share a caller blocked on a queue of no slots is woken by a
// global permit given back only if its queue is watched (WatchGlobal). A
// caller blocked while the queue had slots (here, while its group was
// paused) watches nothing. The threshold falls to 0, and the first caller,
// nudged, watches, is turned away again and waits. When it gives up, the
// caller behind it must not be left unwatched: a global permit given back
// later lets it in.
func TestACallerBlockedBeforeItsQueueLostItsSlotsIsWatchedOnceTheWatcherLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().Isolation(groupconc.IsolationFairShare).GlobalMaxInFlight(1).
			DefaultMaxConcurrencyPerGroup(4).PerGroupQueueThreshold(map[string]int{"solo": 1}))
		r := newGatedTask(t, 0)
		hr := submitGated(t, e, "r", "r", r, groupconc.SubmitOptions{}) // holds the global permit
		h0 := submit(t, t.Context(), e, "solo", "t0", succeed)          // waits in solo's one slot
		paused := true
		require.NoError(t, e.SetGroupOverride("solo", groupconc.GroupOverride{Paused: &paused}))
		a := submitBlocking(t.Context(), e, "solo", "a", succeed, groupconc.SubmitOptions{MaxWait: time.Second})
		synctest.Wait()
		b := submitBlocking(t.Context(), e, "solo", "b", succeed, groupconc.SubmitOptions{})
		synctest.Wait()
		zero := 0 // and resumed: t0 waits for the global permit
		require.NoError(t, e.SetGroupOverride("solo", groupconc.GroupOverride{QueueThreshold: &zero}))
		synctest.Wait()
		require.False(t, a.returned() || b.returned(), "both callers wait: %+v", e.Stats())
		h0.Cancel() // wakes a, which waits again, watching
		synctest.Wait()

		time.Sleep(2 * time.Second) // fake clock: a gives up
		synctest.Wait()
		require.True(t, a.returned(), "a's MaxWait ended its wait")
		require.False(t, b.returned(), "b waits for the global permit: %+v", e.Stats())
		r.Release()
		synctest.Wait()
		require.True(t, b.returned(), "b's caller is let in by the global permit given back: %+v", e.Stats())
		require.NoError(t, b.err)
		assert.Equal(t, groupconc.StatusSuccess, b.h.Wait().Status)
		quiesce(t, e, hr, h0, b.h)
	})
}

// TestACallerBlockedBehindACostlyTaskSentBackToATenantsLineIsLetIn: the
// same at a tenant's line whose queue has no slots, under fair share.
// Lowering acme's limit sent u1's costly task back from the global line to
// acme's, holding u1's slot and none of acme's. The caller's task of u2
// finds one of acme's permits free, but u1's task waits ahead of it there.
// Pausing u1 takes that task out of acme's line, giving back no slot of
// acme's queue, and the caller is let in to the permit.
func TestACallerBlockedBehindACostlyTaskSentBackToATenantsLineIsLetIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := func(acme int) *groupconc.PolicyBuilder {
			return builder().Isolation(groupconc.IsolationFairShare).ParentSeparator("/").GlobalMaxInFlight(2).
				DefaultMaxConcurrencyPerGroup(5).PerGroupMaxConcurrency(map[string]int{"acme": acme}).
				PerGroupQueueThreshold(map[string]int{"acme": 0})
		}
		e := newExecutor(t, policy(3))
		ks, hs := submitEach(t, e, "acme/u3", "x") // the global cap's two permits
		hw, err := groupconc.SubmitWith(t.Context(), e, "acme/u1", "w", succeed, groupconc.SubmitOptions{Cost: 2})
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, 2, startedCount(ks...))
		require.NoError(t, e.UpdatePolicy(mustBuild(t, policy(2))))
		c := submitBlocking(t.Context(), e, "acme/u2", "c", succeed, groupconc.SubmitOptions{})
		synctest.Wait()
		require.False(t, c.returned(), "c's caller waits behind u1's costly task: %+v", e.Stats())

		pause(t, e, "acme/u1", true)
		synctest.Wait()
		require.True(t, c.returned(), "c's caller is let in as u1's task leaves acme's line: %+v", e.Stats())
		require.NoError(t, c.err)
		pause(t, e, "acme/u1", false)
		releaseAll(t, e, ks, append(hs, hw, c.h))
	})
}

// TestACallerBlockedBehindACostlyWaiterInATenantsLineIsLetInAsItLeaves:
// the same at a tenant's bulkhead, whose queue lost its slots after big's
// task took one. The caller's task of solo finds a permit of p's bulkhead
// free, but big's costly task waits ahead of it there. That task holds no
// permit of p's, so none it gives back as it leaves wakes the caller, and
// the slot it gives back is one over the threshold. Its leaving must.
func TestACallerBlockedBehindACostlyWaiterInATenantsLineIsLetInAsItLeaves(t *testing.T) {
	for _, how := range leaveWays {
		t.Run(how, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
				synctest.Test(t, func(t *testing.T) {
					e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(4).
						PerGroupMaxInFlight(map[string]int{"p": 3}).PerGroupQueueThreshold(map[string]int{"p": 1}))
					r := newGatedTask(t, 0)
					hr := submitGated(t, e, "p/r", "r", r, groupconc.SubmitOptions{Cost: 2})
					synctest.Wait()
					hb, err := groupconc.SubmitWith(t.Context(), e, "p/big", "big", succeed, groupconc.SubmitOptions{Cost: 2})
					require.NoError(t, err)
					zero := 0
					require.NoError(t, e.SetGroupOverride("p", groupconc.GroupOverride{QueueThreshold: &zero}))
					c := submitBlocking(t.Context(), e, "p/solo", "c", succeed, groupconc.SubmitOptions{})
					synctest.Wait()
					require.False(t, c.returned(), "c's caller waits behind big's costly task: %+v", e.Stats())

					leaveLine(t, e, how, "p/big", hb)
					requireLetIn(t, e, c, how, "p/big", hb, r)
					quiesce(t, e, hr, c.h)
				})
			})
		})
	}
}

// TestASecondWatcherOfAQueueStaysWatchedAsTheFirstGivesUp: under fair
// share two callers blocked on solo's queue of no slots both watch it for
// a global permit. The first gives up. The queue stays watched for the
// second: a global permit given back later lets it in.
func TestASecondWatcherOfAQueueStaysWatchedAsTheFirstGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().Isolation(groupconc.IsolationFairShare).GlobalMaxInFlight(1).
			DefaultMaxConcurrencyPerGroup(4).PerGroupQueueThreshold(map[string]int{"solo": 0}))
		r := newGatedTask(t, 0)
		hr := submitGated(t, e, "r", "r", r, groupconc.SubmitOptions{}) // holds the global permit
		synctest.Wait()
		a := submitBlocking(t.Context(), e, "solo", "a", succeed, groupconc.SubmitOptions{MaxWait: time.Second})
		synctest.Wait()
		b := submitBlocking(t.Context(), e, "solo", "b", succeed, groupconc.SubmitOptions{})
		synctest.Wait()
		require.False(t, a.returned() || b.returned(), "both callers wait: %+v", e.Stats())

		time.Sleep(2 * time.Second) // fake clock: a gives up
		synctest.Wait()
		require.True(t, a.returned(), "a's MaxWait ended its wait")
		require.False(t, b.returned())
		r.Release()
		synctest.Wait()
		require.True(t, b.returned(), "b's caller is let in by the global permit given back: %+v", e.Stats())
		require.NoError(t, b.err)
		assert.Equal(t, groupconc.StatusSuccess, b.h.Wait().Status)
		quiesce(t, e, hr, b.h)
	})
}
