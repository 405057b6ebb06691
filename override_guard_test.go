package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Group overrides beside their neighbours: guards that own some of them, the
// listing of those in force, and overrides racing every other kind of call.

var errFleet = errors.New("owned by the fleet")

func TestAGuardRefusesTheOverridesItOwns(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder())
	for _, k := range []string{"fleet", "local"} {
		submit(t, t.Context(), e, k, "1", succeed).Wait()
	}
	var asked []string
	guard := func(key string, o groupconc.GroupOverride) error {
		asked = append(asked, key)
		if key == "fleet" && o.MaxConcurrency != nil {
			return fmt.Errorf("group %q: %w", key, errFleet)
		}
		return nil
	}
	require.NoError(t, e.SetGroupOverride("fleet", groupconc.GroupOverride{MaxConcurrency: ptr(3)}))
	_, err := e.GuardOverrides(guard)
	require.ErrorIs(t, err, errFleet, "an override in force that the guard refuses")
	require.NoError(t, e.SetGroupOverride("fleet", groupconc.GroupOverride{}), "not installed")

	asked = nil
	remove, err := e.GuardOverrides(guard)
	require.NoError(t, err)
	err = e.SetGroupOverride("fleet", groupconc.GroupOverride{MaxConcurrency: ptr(3)})
	require.ErrorIs(t, err, errFleet)
	gs, _ := e.GroupStats("fleet")
	assert.Equal(t, 1, gs.MaxConcurrency, "a refused override changes nothing")
	require.NoError(t, e.SetGroupOverride("fleet", groupconc.GroupOverride{QueueThreshold: ptr(4)}))
	require.NoError(t, e.SetGroupOverride("local", groupconc.GroupOverride{MaxConcurrency: ptr(3)}))
	assert.Equal(t, []string{"fleet", "fleet", "local"}, asked)

	remove()
	remove()
	require.NoError(t, e.SetGroupOverride("fleet", groupconc.GroupOverride{MaxConcurrency: ptr(3)}), "the guard is gone")
	_, err = e.GuardOverrides(nil)
	assert.Error(t, err)

	require.NoError(t, e.Close())
	_, err = e.GuardOverrides(guard)
	assert.ErrorIs(t, err, groupconc.ErrClosed, "nothing left to guard, as SetGroupOverride says")
}

func TestGroupOverridesListsTheOverridesInForceByKey(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder())
	for _, k := range []string{"c", "a", "b"} {
		submit(t, t.Context(), e, k, "1", succeed).Wait()
		require.NoError(t, e.SetGroupOverride(k, groupconc.GroupOverride{MaxInFlight: ptr(len(k) + 1)}))
	}
	var keys []string
	for k, o := range e.GroupOverrides() {
		keys = append(keys, k)
		assert.Equal(t, 2, *o.MaxInFlight)
	}
	assert.Equal(t, []string{"a", "b", "c"}, keys)
}

// TestOverridesRaceWithUpdatesSubmitsAndEvictions runs every kind of call
// at once (for the race detector) and then checks that every group's limits
// are its policy's with its override on top.
func TestOverridesRaceWithUpdatesSubmitsAndEvictions(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		b := func(n int) *groupconc.GroupPolicy {
			return mustBuild(t, groupconc.NewPolicyBuilder().Isolation(mode).DefaultMaxConcurrencyPerGroup(n).ConcurrencyResolver(func(k string) int {
				if k == "r" {
					return n + 10
				}
				panic("not resolved")
			}))
		}
		e := groupconc.New(b(1))
		defer e.Close()
		keys := []string{"a", "b", "r"}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var hs []*groupconc.TaskHandle[int]
		for w := range 4 {
			wg.Go(func() {
				for i := range 200 {
					k := keys[(i+w)%len(keys)]
					switch (i + w) % 5 {
					case 0, 1:
						h, err := groupconc.Submit(context.Background(), e, k, "t", succeed)
						if err == nil {
							mu.Lock()
							hs = append(hs, h)
							mu.Unlock()
						}
					case 2:
						err := e.SetGroupOverride(k, groupconc.GroupOverride{MaxConcurrency: ptr(1 + i%4)})
						if err != nil && !errors.Is(err, groupconc.ErrUnknownGroup) {
							t.Error(err)
						}
					case 3:
						if err := e.UpdatePolicy(b(1 + i%3)); err != nil {
							t.Error(err)
						}
					default:
						if i%20 == 4 {
							e.EvictGroup(k)
						}
						e.ExplainGroup(k)
					}
				}
			})
		}
		wg.Wait()
		for _, h := range hs {
			h.Wait()
		}
		require.NoError(t, e.Quiescent())
		for s := range e.AllGroupStats() {
			want := e.Policy().ResolveConcurrency(s.GroupKey)
			if o, ok := e.GroupOverride(s.GroupKey); ok {
				want = *o.MaxConcurrency
			}
			assert.Equal(t, want, s.MaxConcurrency, s.GroupKey)
			x, _ := e.ExplainGroup(s.GroupKey)
			assert.Equal(t, s.MaxConcurrency, x.MaxConcurrency.Value, s.GroupKey)
		}
	})
}

// A guard that panics refuses the override, with an error that says so,
// and the executor takes the next one.
func TestAGuardThatPanicsRefusesTheOverride(t *testing.T) {
	e := newExecutor(t, builder())
	h, err := groupconc.Submit(context.Background(), e, "k", "t", succeed)
	require.NoError(t, err)
	h.Wait()
	panics := true
	remove, err := e.GuardOverrides(func(string, groupconc.GroupOverride) error {
		if panics {
			panic("boom")
		}
		return nil
	})
	require.NoError(t, err)
	defer remove()
	err = e.SetGroupOverride("k", groupconc.GroupOverride{MaxConcurrency: ptr(2)})
	require.ErrorContains(t, err, "panicked")
	require.ErrorContains(t, err, "boom")
	_, set := e.GroupOverride("k")
	assert.False(t, set, "a refused override is not set")
	panics = false
	require.NoError(t, e.SetGroupOverride("k", groupconc.GroupOverride{MaxConcurrency: ptr(2)}))
}
