package groupconc_test

// Under fair share a group's queue threshold counts its tasks waiting for
// a global permit too. So a caller blocked on a group's queue of no slots
// may wait for a global permit that a task of another group gives back.

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// fairNoSlots is a fair-share policy with a global cap and no queue slot
// in any group.
func fairNoSlots(global int) *groupconc.PolicyBuilder {
	return builder().Isolation(groupconc.IsolationFairShare).GlobalMaxInFlight(global).
		DefaultMaxConcurrencyPerGroup(4).DefaultQueueThresholdPerGroup(0)
}

func TestAGlobalPermitGivenBackLetsInCallersBlockedOnOtherGroupsQueuesOfNoSlots(t *testing.T) {
	for _, how := range []string{"the task ends", "UpdatePolicy raises the cap"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, fairNoSlots(2))
				ks := []*gatedTask{newGatedTask(t, 0), newGatedTask(t, 0)}
				hs := []*groupconc.TaskHandle[int]{
					submit(t, t.Context(), e, "a", "a1", ks[0].Fn),
					submit(t, t.Context(), e, "a", "a2", ks[1].Fn),
				}
				synctest.Wait()
				b := submitBlocking(t.Context(), e, "b", "b", succeed, groupconc.SubmitOptions{})
				c := submitBlocking(t.Context(), e, "c", "c", succeed, groupconc.SubmitOptions{})
				synctest.Wait()
				require.False(t, b.returned(), "b's caller returned, want it blocked")
				require.False(t, c.returned(), "c's caller returned, want it blocked")
				if how == "the task ends" {
					ks[0].Release()
					ks[1].Release()
				} else {
					upUpdate(t, e, fairNoSlots(4))
				}
				synctest.Wait()
				for name, w := range map[string]*blocked{"b": b, "c": c} {
					if assert.True(t, w.returned(), "%s's caller is still blocked with global permits free", name) {
						require.NoError(t, w.err)
						assert.Equal(t, groupconc.StatusSuccess, w.h.Wait().Status, name)
						hs = append(hs, w.h)
					}
				}
				ks[0].Release()
				ks[1].Release()
				quiesce(t, e, hs...)
			})
		})
	}
}

func TestDoBlockedOnAQueueOfNoSlotsRunsOnceAnotherGroupGivesBackAGlobalPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, fairNoSlots(1))
		k := newGatedTask(t, 0)
		h := submit(t, t.Context(), e, "a", "a", k.Fn)
		synctest.Wait()
		done := make(chan error, 1)
		go func() {
			_, err := groupconc.Do(t.Context(), e, "b", func(context.Context) (int, error) { return 1, nil },
				groupconc.SubmitOptions{Block: true})
			done <- err
		}()
		synctest.Wait()
		require.Empty(t, done, "Do returned, want it blocked")
		k.Release()
		synctest.Wait()
		select {
		case err := <-done:
			require.NoError(t, err)
		default:
			t.Fatal("Do is still blocked with the global permit free")
		}
		quiesce(t, e, h)
	})
}

// The raise lets b in as it is made, not when the task whose sample made
// it gives its permit back: LimitChanges, told once the change is in
// force, holds that task until b is seen in.
func TestAnAdaptiveGlobalCapRaisedLetsInACallerBlockedOnAQueueOfNoSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(script)
		hold := make(chan struct{})
		told := func(ch groupconc.LimitChange) {
			if ch.New > ch.Old {
				<-hold
			}
		}
		e := newExecutor(t, fairNoSlots(3).AdaptiveGlobal(groupconc.AdaptiveConfig{New: s.new, Min: 1}).LimitChanges(told))
		ka, kc, kd := newGatedTask(t, 0), newGatedTask(t, 0), newGatedTask(t, 0)
		hs := []*groupconc.TaskHandle[int]{
			submit(t, t.Context(), e, "a", "a", ka.Fn),
			submit(t, t.Context(), e, "c", "c", kc.Fn),
			submit(t, t.Context(), e, "d", "d", kd.Fn),
		}
		synctest.Wait()
		s.want.Store(1)
		kc.Release() // the cap falls to 1, under the 2 still running
		synctest.Wait()
		require.Equal(t, 1, e.Stats().GlobalMaxInFlight)
		b := submitBlocking(t.Context(), e, "b", "b", succeed, groupconc.SubmitOptions{})
		synctest.Wait()
		require.False(t, b.returned(), "b's caller returned, want it blocked")
		s.want.Store(3)
		kd.Release() // the cap rises to 3, while d still holds its permit
		synctest.Wait()
		assert.Equal(t, 3, e.Stats().GlobalMaxInFlight)
		assert.True(t, b.returned(), "b's caller is still blocked under the raised cap, with 2 of 3 permits held")
		close(hold)
		synctest.Wait()
		require.True(t, b.returned(), "b's caller is still blocked once d ended")
		require.NoError(t, b.err)
		assert.Equal(t, groupconc.StatusSuccess, b.h.Wait().Status)
		ka.Release()
		quiesce(t, e, append(hs, b.h)...)
	})
}
