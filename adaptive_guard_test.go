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
		release, inGuard := make(chan struct{}), make(chan struct{})
		remove, err := e.GuardOverrides(func(string, groupconc.GroupOverride) error {
			close(inGuard)
			<-release
			return nil
		})
		require.NoError(t, err)
		defer remove()
		set := make(chan error, 1)
		go func() { set <- e.SetGroupOverride("k", groupconc.GroupOverride{MaxConcurrency: ptr(2)}) }()
		<-inGuard
		h, err := groupconc.Submit(context.Background(), e, "unrelated", "u", succeed)
		require.NoError(t, err)
		select {
		case <-h.Done():
		case <-time.After(10 * time.Second):
			t.Error("a task of another group did not end while a guard blocked")
		}
		close(release)
		assert.NoError(t, <-set)
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
