package groupconc_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// UpdatePolicy continued: each layer from Unlimited to a limit and back,
// re-resolution, weights, the policy's hooks and the refusals.

func TestUpdatePolicyTakesEveryLayerFromUnlimitedToALimitAndBack(t *testing.T) {
	type layer struct {
		name          string
		limited, open func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder
		keys          []string // of the four tasks running when the limit comes
		key           string   // of the tasks submitted under the limit
	}
	unlimitedConc := func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
		return b.DefaultMaxConcurrencyPerGroup(groupconc.Unlimited)
	}
	for _, l := range []layer{
		{"concurrency", func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder { return b.DefaultMaxConcurrencyPerGroup(2) }, unlimitedConc,
			[]string{"a", "a", "a", "a"}, "a"},
		{"bulkhead", func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
			return unlimitedConc(b).DefaultMaxInFlightPerGroup(2)
		}, unlimitedConc,
			[]string{"a", "a", "a", "a"}, "a"},
		{"global", func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
			return unlimitedConc(b).GlobalMaxInFlight(2)
		}, unlimitedConc,
			[]string{"a", "b", "c", "d"}, "e"},
	} {
		t.Run(l.name, func(t *testing.T) {
			upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
				e := newExecutor(t, l.open(b()))
				g := upNewGated()
				for i, key := range l.keys {
					g.submit(t, e, key, fmt.Sprint("old", i))
				}
				synctest.Wait()
				require.EqualValues(t, 4, g.running.cur.Load())

				upUpdate(t, e, l.limited(b()))
				g.submit(t, e, l.key, "new0")
				synctest.Wait()
				assert.False(t, g.started("new0"), "started with 4 running under the new limit 2")
				g.release("old0")
				g.release("old1")
				assert.False(t, g.started("new0"), "started with 2 running under the new limit 2")
				g.release("old2")
				assert.True(t, g.started("new0"), "not started with 1 running under the new limit 2")
				g.submit(t, e, l.key, "new1")
				g.submit(t, e, l.key, "new2")
				synctest.Wait()
				assert.EqualValues(t, 2, g.running.cur.Load(), "running under the new limit 2")

				upUpdate(t, e, l.open(b()))
				synctest.Wait()
				assert.EqualValues(t, 4, g.running.cur.Load(), "running once the limit was lifted")
				g.finish(t, e)
			})
		})
	}
}

func TestUpdatePolicyTakesAGroupQueueThresholdFromUnlimitedToALimitAndBack(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b())
		g := upNewGated()
		for i := range 4 {
			g.submit(t, e, "a", fmt.Sprint(i))
		}
		synctest.Wait()
		upUpdate(t, e, b().DefaultQueueThresholdPerGroup(2))
		requireRejected(t, g.submit(t, e, "a", "over"), "group")
		upUpdate(t, e, b())
		h := g.submit(t, e, "a", "accepted")
		synctest.Wait()
		assert.False(t, h.IsDone(), "a task rejected once the threshold was lifted")
		assert.Equal(t, 4, groupStats(t, e, "a").Waiting)
		g.finish(t, e)
	})
}

func TestUpdatePolicyTakesTheGlobalQueueThresholdFromUnlimitedToALimitAndBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := func() *groupconc.PolicyBuilder { return groupconc.NewPolicyBuilder().GlobalMaxInFlight(1) }
		e := newExecutor(t, b())
		g := upNewGated()
		for i := range 4 {
			g.submit(t, e, fmt.Sprint("g", i), fmt.Sprint(i))
		}
		synctest.Wait()
		require.Equal(t, 3, e.Stats().Waiting)
		upUpdate(t, e, b().GlobalQueueThreshold(2))
		requireRejected(t, g.submit(t, e, "x", "over"), "global")
		upUpdate(t, e, b())
		h := g.submit(t, e, "x", "accepted")
		synctest.Wait()
		assert.False(t, h.IsDone(), "a task rejected once the global threshold was lifted")
		g.finish(t, e)
	})
}

func TestUpdatePolicyResolvesEveryKnownGroupAndEveryNewGroupFromTheNewPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		calls := map[string]int{}
		resolver := func(n int) func(string) int {
			return func(key string) int {
				mu.Lock()
				defer mu.Unlock()
				calls[fmt.Sprint(key, n)]++
				return n
			}
		}
		b := groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare)
		e := newExecutor(t, b.ConcurrencyResolver(resolver(1)).WeightResolver(resolver(1)))
		quiesce(t, e, submit(t, t.Context(), e, "old", "0", succeed))

		upUpdate(t, e, groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
			ConcurrencyResolver(resolver(4)).WeightResolver(resolver(3)).
			DefaultMaxInFlightPerGroup(9).DefaultQueueThresholdPerGroup(7).GlobalMaxInFlight(8))
		want := groupconc.GroupStats{GroupKey: "old", MaxConcurrency: 4, MaxInFlight: 9, QueueThreshold: 7, Weight: 3, Succeeded: 1}
		assert.Equal(t, want, groupStats(t, e, "old"), "a known group")
		quiesce(t, e, submit(t, t.Context(), e, "new", "0", succeed))
		want.GroupKey = "new"
		assert.Equal(t, want, groupStats(t, e, "new"), "a new group")
		assert.Equal(t, 8, e.Stats().GlobalMaxInFlight)
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, map[string]int{"old1": 2, "old4": 1, "old3": 1, "new4": 1, "new3": 1}, calls, "resolver calls")
	})
}

func TestUpdatePolicyWeightsGovernTheNextFreedGlobalPermit(t *testing.T) {
	for _, c := range []struct {
		weightA int
		want    string
	}{{1, "b1"}, {3, "a2"}} {
		t.Run(fmt.Sprint("weight of a ", c.weightA), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := func() *groupconc.PolicyBuilder {
					return groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
						GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(4)
				}
				e := newExecutor(t, b())
				g := upNewGated()
				for _, id := range []string{"f0", "a0", "a1", "b0", "a2", "b1"} {
					g.submit(t, e, id[:1], id)
					synctest.Wait()
				}
				require.Len(t, g.starts.list(), 4, "f0 a0 a1 b0 run; a2 and b1 wait, a2 first")
				upUpdate(t, e, b().PerGroupWeight(map[string]int{"a": c.weightA}))
				assert.Equal(t, c.weightA, groupStats(t, e, "a").Weight)
				g.release("f0") // a runs 2/weight, b 1/1
				got := g.starts.list()
				assert.Equal(t, c.want, got[len(got)-1])
				g.finish(t, e)
			})
		})
	}
}

func TestUpdatePolicySwapsTheRejectionPolicyHandlerAndListener(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		first, second := newRecorder(), newRecorder()
		e := newExecutor(t, b().DefaultQueueThresholdPerGroup(0).TaskLifecycleListener(first))
		g := upNewGated()
		g.submit(t, e, "a", "running")
		synctest.Wait()
		requireRejected(t, g.submit(t, e, "a", "abort"), "group")
		_, err := g.hs["abort"].Await(t.Context())
		assert.ErrorIs(t, err, groupconc.ErrRejected, "under RejectAbort")

		upUpdate(t, e, b().DefaultQueueThresholdPerGroup(0).RejectionPolicy(groupconc.RejectDiscard).TaskLifecycleListener(second))
		h := g.submit(t, e, "a", "discard")
		r, err := h.Await(t.Context())
		assert.Equal(t, groupconc.StatusRejected, r.Status)
		assert.NoError(t, err, "under RejectDiscard")
		assert.Equal(t, []string{evSubmitted, evRejected}, second.Events("a", "discard"), "the new listener")
		assert.Empty(t, first.Events("a", "discard"), "the old listener")

		var handled []string
		upUpdate(t, e, b().DefaultQueueThresholdPerGroup(0).RejectionHandler(func(_ context.Context, r *groupconc.Rejection) (any, error) {
			handled = append(handled, r.TaskID)
			return 42, nil
		}))
		h = submit(t, t.Context(), e, "a", "handled", succeed)
		r = h.Wait()
		assert.Equal(t, groupconc.StatusSuccess, r.Status)
		assert.Equal(t, 42, r.Value, "the handler's value")
		assert.Equal(t, []string{"handled"}, handled)
		assert.Empty(t, second.Events("a", "handled"), "the listener the last policy dropped")
		g.finish(t, e)
	})
}

func TestUpdatePolicyRefusesANilPolicyAnotherModeAndAClosedExecutor(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b().DefaultMaxConcurrencyPerGroup(2))
		quiesce(t, e, submit(t, t.Context(), e, "a", "0", succeed))
		assert.ErrorIs(t, e.UpdatePolicy(nil), groupconc.ErrInvalidPolicy, "nil policy")

		other := groupconc.IsolationFairShare
		if mustBuild(t, b()).Isolation() == other {
			other = groupconc.IsolationOff
		}
		err := e.UpdatePolicy(mustBuild(t, groupconc.NewPolicyBuilder().Isolation(other).DefaultMaxConcurrencyPerGroup(5)))
		assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy, "another isolation mode")
		assert.Equal(t, 2, groupStats(t, e, "a").MaxConcurrency, "limits after a refused update")

		require.NoError(t, e.Shutdown(t.Context()))
		assert.ErrorIs(t, e.UpdatePolicy(mustBuild(t, b())), groupconc.ErrClosed, "after Shutdown")

		e2 := groupconc.New(mustBuild(t, b()))
		require.NoError(t, e2.Close())
		assert.ErrorIs(t, e2.UpdatePolicy(mustBuild(t, b())), groupconc.ErrClosed, "after Close")
	})
}

// A zero GroupPolicy, never built, is taken as DefaultPolicy, by
// UpdatePolicy as by New.
func TestUpdatePolicyTakesAZeroPolicyAsTheDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(2))
		require.NoError(t, e.UpdatePolicy(&groupconc.GroupPolicy{}))
		assert.Same(t, groupconc.DefaultPolicy(), e.Policy())
		quiesce(t, e, submit(t, t.Context(), e, "a", "0", succeed))
		assert.Equal(t, 1, groupStats(t, e, "a").MaxConcurrency)
	})
}
