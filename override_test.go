package groupconc_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// The behaviour suite of group overrides: SetGroupOverride and its guards.

// ovGated submits n gated tasks to key and returns them with their handles.
func ovGated(t *testing.T, e *groupconc.GroupExecutor, key string, n int) ([]*gatedTask, []*groupconc.TaskHandle[int]) {
	t.Helper()
	var ks []*gatedTask
	var hs []*groupconc.TaskHandle[int]
	for i := range n {
		k := newGatedTask(t, i)
		ks = append(ks, k)
		hs = append(hs, submit(t, t.Context(), e, key, fmt.Sprintf("%s%d", key, i), k.Fn))
	}
	return ks, hs
}

func ovStarted(ks []*gatedTask) int {
	n := 0
	for _, k := range ks {
		if k.started.Load() {
			n++
		}
	}
	return n
}

func TestARaisedOverrideStartsTheWaitingTasksAtOnce(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b())
		ks, hs := ovGated(t, e, "g", 4)
		synctest.Wait()
		require.Equal(t, 1, ovStarted(ks))
		require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{MaxConcurrency: ptr(3)}))
		synctest.Wait()
		assert.Equal(t, 3, ovStarted(ks), "started once the override raised the limit to 3")
		gs, _ := e.GroupStats("g")
		assert.Equal(t, 3, gs.MaxConcurrency)
		for _, k := range ks {
			k.Release()
		}
		quiesce(t, e, hs...)
	})
}

func TestALoweredOverrideInterruptsNothingAndDrains(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b().DefaultMaxConcurrencyPerGroup(3))
		ks, hs := ovGated(t, e, "g", 3)
		synctest.Wait()
		require.Equal(t, 3, ovStarted(ks))
		require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{MaxConcurrency: ptr(1)}))
		late, lateHs := ovGated(t, e, "g", 1)
		for i := range 2 {
			ks[i].Release()
			synctest.Wait()
			assert.False(t, late[0].started.Load(), "started with %d running, over the lowered limit 1", 2-i)
		}
		gs, _ := e.GroupStats("g")
		assert.Equal(t, []int{1, 1, 1}, []int{gs.Running, gs.Waiting, gs.MaxConcurrency})
		ks[2].Release()
		synctest.Wait()
		assert.True(t, late[0].started.Load(), "the waiting task starts once the running count is below the limit")
		late[0].Release()
		quiesce(t, e, append(hs, lateHs...)...)
	})
}

func TestARaisedThresholdOverrideHandsSlotsToBlockedCallers(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e, ks, hs := fullGroup(t, mode, nil)
			c := submitBlocking(t.Context(), e, "a", "c", succeed, groupconc.SubmitOptions{})
			synctest.Wait()
			require.False(t, c.returned())
			require.NoError(t, e.SetGroupOverride("a", groupconc.GroupOverride{QueueThreshold: ptr(2)}))
			synctest.Wait()
			require.True(t, c.returned(), "the raised threshold's slot goes to the blocked caller")
			require.NoError(t, c.err)
			for _, k := range ks {
				k.Release()
			}
			assert.Equal(t, groupconc.StatusSuccess, c.h.Wait().Status)
			quiesce(t, e, hs...)
		})
	})
}

func TestAnOverrideOutlivesUpdatePolicyUntilRemoved(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		e := newExecutor(t, b())
		quiesce(t, e, submit(t, t.Context(), e, "g", "1", succeed), submit(t, t.Context(), e, "h", "1", succeed))
		o := groupconc.GroupOverride{MaxConcurrency: ptr(5), QueueThreshold: ptr(0), MaxInFlight: ptr(groupconc.Unlimited)}
		if e.Policy().Isolation() == groupconc.IsolationFairShare {
			o.Weight = ptr(3)
		}
		require.NoError(t, e.SetGroupOverride("g", o))
		upUpdate(t, e, b().DefaultMaxConcurrencyPerGroup(2).DefaultQueueThresholdPerGroup(7).DefaultMaxInFlightPerGroup(9))
		gs, _ := e.GroupStats("g")
		want := []int{5, groupconc.Unlimited, 0, 1}
		if o.Weight != nil {
			want[3] = 3
		}
		assert.Equal(t, want, []int{gs.MaxConcurrency, gs.MaxInFlight, gs.QueueThreshold, gs.Weight}, "g keeps its override")
		hs, _ := e.GroupStats("h")
		assert.Equal(t, []int{2, 9, 7}, []int{hs.MaxConcurrency, hs.MaxInFlight, hs.QueueThreshold}, "h follows the policy")
		got, ok := e.GroupOverride("g")
		require.True(t, ok)
		assert.Equal(t, o, got)

		require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{MaxConcurrency: ptr(4)}), "replaces the whole override")
		gs, _ = e.GroupStats("g")
		assert.Equal(t, []int{4, 9, 7, 1}, []int{gs.MaxConcurrency, gs.MaxInFlight, gs.QueueThreshold, gs.Weight})

		require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{}), "removes it")
		gs, _ = e.GroupStats("g")
		assert.Equal(t, 2, gs.MaxConcurrency, "back to the policy")
		_, ok = e.GroupOverride("g")
		assert.False(t, ok)
	})
}

func TestAnOverrideOfAnUnknownGroupIsRefusedAndCreatesNothing(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder())
	for _, o := range []groupconc.GroupOverride{{MaxConcurrency: ptr(4)}, {}} {
		err := e.SetGroupOverride("never-used", o)
		require.ErrorIs(t, err, groupconc.ErrUnknownGroup)
		assert.Contains(t, err.Error(), `"never-used"`)
	}
	_, ok := e.GroupStats("never-used")
	assert.False(t, ok)
	assert.Equal(t, 0, e.Stats().Groups)
	_, ok = e.GroupOverride("never-used")
	assert.False(t, ok)
	submit(t, t.Context(), e, "never-used", "1", succeed).Wait()
	gs, _ := e.GroupStats("never-used")
	assert.Equal(t, 1, gs.MaxConcurrency, "the refused override is not waiting for first use")
}

func TestAnOverrideIsDroppedWithItsGroup(t *testing.T) {
	for _, how := range []string{"evicted", "forgotten as idle"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, groupconc.NewPolicyBuilder().IdleGroupTTL(idleTTL))
				quiesce(t, e, submit(t, t.Context(), e, "g", "1", succeed))
				require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{MaxConcurrency: ptr(6)}))
				if how == "evicted" {
					e.EvictGroup("g")
				} else {
					time.Sleep(2 * idleTTL)
					require.Equal(t, 0, e.Stats().Groups)
				}
				_, ok := e.GroupOverride("g")
				assert.False(t, ok)
				assert.Empty(t, slices.Collect(maps.Keys(maps.Collect(e.GroupOverrides()))))
				require.ErrorIs(t, e.SetGroupOverride("g", groupconc.GroupOverride{MaxConcurrency: ptr(6)}), groupconc.ErrUnknownGroup)
				quiesce(t, e, submit(t, t.Context(), e, "g", "2", succeed))
				gs, _ := e.GroupStats("g")
				assert.Equal(t, 1, gs.MaxConcurrency, "the key's next group resolves from the policy alone")
				x, _ := e.ExplainGroup("g")
				assert.Equal(t, groupconc.SourceBuiltin, x.MaxConcurrency.Source)
			})
		})
	}
}

func TestABadOverrideIsRefusedNamingTheFieldAndChangesNothing(t *testing.T) {
	for _, tc := range []struct {
		mode groupconc.IsolationMode
		o    groupconc.GroupOverride
		want string
	}{
		{groupconc.IsolationOff, groupconc.GroupOverride{MaxConcurrency: ptr(0)}, "MaxConcurrency is 0, want >= 1"},
		{groupconc.IsolationOff, groupconc.GroupOverride{MaxInFlight: ptr(-1)}, "MaxInFlight is -1, want >= 1"},
		{groupconc.IsolationOff, groupconc.GroupOverride{QueueThreshold: ptr(-1)}, "QueueThreshold is -1, want >= 0"},
		{groupconc.IsolationOff, groupconc.GroupOverride{MaxConcurrency: ptr(2), Weight: ptr(2)}, "Weight needs Isolation(IsolationFairShare), have off"},
		{groupconc.IsolationFairShare, groupconc.GroupOverride{Weight: ptr(0)}, "Weight is 0, want >= 1"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(tc.mode))
			submit(t, t.Context(), e, "g", "1", succeed).Wait()
			err := e.SetGroupOverride("g", tc.o)
			require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
			assert.Contains(t, err.Error(), tc.want)
			_, ok := e.GroupOverride("g")
			assert.False(t, ok)
			gs, _ := e.GroupStats("g")
			assert.Equal(t, []int{1, 1}, []int{gs.MaxConcurrency, gs.Weight})
		})
	}
}

func TestOverridesAreBoundedAndGoneGroupsFreeTheirPlace(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder())
	key := func(i int) string { return fmt.Sprintf("k%d", i) }
	hs := make([]*groupconc.TaskHandle[int], 0, groupconc.MaxGroupOverrides+1)
	for i := range groupconc.MaxGroupOverrides + 1 {
		hs = append(hs, submit(t, t.Context(), e, key(i), "1", succeed))
	}
	for _, h := range hs {
		h.Wait()
	}
	two := groupconc.GroupOverride{MaxConcurrency: ptr(2)}
	for i := range groupconc.MaxGroupOverrides {
		require.NoError(t, e.SetGroupOverride(key(i), two))
	}
	last := key(groupconc.MaxGroupOverrides)
	err := e.SetGroupOverride(last, two)
	require.ErrorIs(t, err, groupconc.ErrTooManyOverrides)
	assert.Contains(t, err.Error(), "10000 keys")
	require.NoError(t, e.SetGroupOverride(key(0), groupconc.GroupOverride{MaxConcurrency: ptr(3)}), "a key that has one may change it")

	e.EvictGroup(key(1))
	require.NoError(t, e.SetGroupOverride(last, two), "an evicted group's override does not count")
	require.ErrorIs(t, e.SetGroupOverride(key(1), two), groupconc.ErrUnknownGroup)
	submit(t, t.Context(), e, key(1), "2", succeed).Wait()
	require.ErrorIs(t, e.SetGroupOverride(key(1), two), groupconc.ErrTooManyOverrides)
	require.NoError(t, e.SetGroupOverride(key(2), groupconc.GroupOverride{}))
	require.NoError(t, e.SetGroupOverride(key(1), two), "a removed override does not count")
}

func TestSetGroupOverrideAfterCloseIsErrClosed(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder())
	submit(t, t.Context(), e, "g", "1", succeed).Wait()
	require.NoError(t, e.Close())
	assert.ErrorIs(t, e.SetGroupOverride("g", groupconc.GroupOverride{MaxConcurrency: ptr(2)}), groupconc.ErrClosed)
}

func TestSetGroupOverrideCopiesItsValues(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder())
	submit(t, t.Context(), e, "g", "1", succeed).Wait()
	n := 4
	require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{MaxConcurrency: &n}))
	n = 9
	got, _ := e.GroupOverride("g")
	*got.MaxConcurrency = 7
	again, _ := e.GroupOverride("g")
	assert.Equal(t, 4, *again.MaxConcurrency)
	gs, _ := e.GroupStats("g")
	assert.Equal(t, 4, gs.MaxConcurrency)
}
