package groupconc_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// lowering is an adaptive limit that asks for one less at every sample.
type lowering struct{}

func (lowering) Observe(s groupconc.LimitSample) int { return s.Limit - 1 }

// withAdaptiveGlobal is an executor whose global cap is adaptive and
// moves at every sample.
func withAdaptiveGlobal(t *testing.T) *groupconc.GroupExecutor {
	e := groupconc.New(mustBuild(t, builder().Isolation(groupconc.IsolationFairShare).GlobalMaxInFlight(8).
		AdaptiveGlobal(groupconc.AdaptiveConfig{New: func(string, int, int) groupconc.AdaptiveLimit { return lowering{} }})))
	t.Cleanup(func() { _ = e.Close() })
	h, err := groupconc.Submit(context.Background(), e, "k", "first", succeed)
	require.NoError(t, err)
	h.Wait()
	return e
}

// A guard of overrides runs with the update lock held. A task of another
// group, whose sample moves the adaptive global cap, still ends while a
// guard blocks, and a guard that submits a task and waits for it gets its
// result. The waits are bounded in real time: a goroutine blocked on a
// mutex is not durably blocked for synctest.
func TestAGuardThatBlocksOrWaitsForATaskHoldsNoOtherTaskBack(t *testing.T) {
	t.Run("blocks", func(t *testing.T) {
		e := withAdaptiveGlobal(t)
		release := holdUpdateLock(t, e, "k")
		h, err := groupconc.Submit(context.Background(), e, "unrelated", "u", succeed)
		require.NoError(t, err)
		select {
		case <-h.Done():
		case <-time.After(10 * time.Second):
			t.Error("a task of another group did not end while a guard blocked")
		}
		release()
	})
	t.Run("waits for a task", func(t *testing.T) {
		e := withAdaptiveGlobal(t)
		remove, err := e.GuardOverrides(func(string, groupconc.GroupOverride) error {
			h, err := groupconc.Submit(context.Background(), e, "audit", "a", succeed)
			if err != nil {
				return err
			}
			return h.Wait().Err
		})
		require.NoError(t, err)
		defer remove()
		set := make(chan error, 1)
		go func() { set <- e.SetGroupOverride("k", groupconc.GroupOverride{MaxConcurrency: ptr(2)}) }()
		select {
		case err := <-set:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("SetGroupOverride waits for ever: its guard's task waits for the update lock")
		}
	})
}

// holdUpdateLock sets an override of key, known to e, whose guard blocks:
// SetGroupOverride holds e's update lock while a guard runs. It returns
// once the guard runs, and release, which lets it return and checks that
// the override was set.
func holdUpdateLock(t *testing.T, e *groupconc.GroupExecutor, key string) (release func()) {
	t.Helper()
	unblock, inGuard := make(chan struct{}), make(chan struct{})
	remove, err := e.GuardOverrides(func(k string, _ groupconc.GroupOverride) error {
		if k == key {
			close(inGuard)
			<-unblock
		}
		return nil
	})
	require.NoError(t, err)
	set := make(chan error, 1)
	go func() { set <- e.SetGroupOverride(key, groupconc.GroupOverride{MaxConcurrency: ptr(2)}) }()
	<-inGuard
	return func() {
		close(unblock)
		assert.NoError(t, <-set)
		remove()
	}
}
