package groupconc_test

// A group that a task is entering is never forgotten as idle, also while
// the group, or its parent, is being made: a resolver may take its time.

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// slowOnce returns a hook that, once armed, holds the first call for key
// until hold is closed, after closing in.
func slowOnce(key string) (hook func(string), arm func(), in, hold chan struct{}) {
	in, hold = make(chan struct{}), make(chan struct{})
	armed := false
	hook = func(k string) {
		if k == key && armed {
			armed = false
			close(in)
			<-hold
		}
	}
	return hook, func() { armed = true }, in, hold
}

func TestIdleTTLNeverForgetsAParentWhileAChildOfItIsBeingMade(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			slow, arm, in, hold := slowOnce("t/a")
			parent := func(key string) string {
				slow(key)
				if key == "t/a" {
					return "t"
				}
				return ""
			}
			b := func() *groupconc.PolicyBuilder {
				return modeBuilder(mode).ParentResolver(parent).PerGroupMaxConcurrency(map[string]int{"t": 1})
			}
			e := newExecutor(t, b())
			quiesce(t, e, submit(t, t.Context(), e, "t", "first", succeed)) // "t" is known, and idle
			arm()
			k := newGatedTask(t, 0)
			var child *groupconc.TaskHandle[int]
			var err error
			done := make(chan struct{})
			go func() { defer close(done); child, err = groupconc.Submit(t.Context(), e, "t/a", "child", k.Fn) }()
			<-in
			upUpdate(t, e, b().IdleGroupTTL(idleTTL))
			time.Sleep(3 * idleTTL) // fake clock
			e.Stats()               // forgets what is idle
			close(hold)
			<-done
			require.NoError(t, err)
			synctest.Wait()
			require.True(t, k.started.Load(), "the child's task runs")
			own := submit(t, t.Context(), e, "t", "own", succeed)
			synctest.Wait()
			assert.False(t, own.IsDone(), "t's own task ran beside its child's under t's limit of 1")
			assert.Equal(t, 1, groupStats(t, e, "t").Running)
			k.Release()
			quiesce(t, e, child, own)
		})
	})
}

func TestIdleTTLNeverForgetsAGroupWhileItsLimitsAreResolved(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			slow, arm, in, hold := slowOnce("a")
			limit := func(key string) int {
				slow(key)
				return 1
			}
			e := newExecutor(t, modeBuilder(mode).ConcurrencyResolver(limit).IdleGroupTTL(idleTTL))
			quiesce(t, e, submit(t, t.Context(), e, "a", "first", succeed))
			time.Sleep(3 * idleTTL) // fake clock: "a" is forgotten, and made again
			arm()
			k := newGatedTask(t, 0)
			var h1 *groupconc.TaskHandle[int]
			var err error
			done := make(chan struct{})
			go func() { defer close(done); h1, err = groupconc.Submit(t.Context(), e, "a", "1", k.Fn) }()
			<-in
			time.Sleep(3 * idleTTL) // fake clock
			e.Stats()
			close(hold)
			<-done
			require.NoError(t, err)
			synctest.Wait()
			require.True(t, k.started.Load())
			h2 := submit(t, t.Context(), e, "a", "2", succeed)
			synctest.Wait()
			assert.False(t, h2.IsDone(), "a second task ran beside the first under a limit of 1")
			k.Release()
			quiesce(t, e, h1, h2)
		})
	})
}

// A group being paused is never forgotten as idle as the pause comes: a
// SetGroupOverride that returns nil has paused the group that goes on, and
// a later task of it waits. Here the forgetting comes from a guard, which
// runs after the group was looked up and before the pause is in force.
func TestIdleTTLNeverForgetsAGroupAsItIsPaused(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).IdleGroupTTL(idleTTL))
			quiesce(t, e, submit(t, t.Context(), e, "g", "first", succeed))
			_, err := e.GuardOverrides(func(string, groupconc.GroupOverride) error {
				time.Sleep(3 * idleTTL) // fake clock: "g" is idle, and due to go
				e.Stats()               // forgets what is idle
				return nil
			})
			require.NoError(t, err)
			paused := true
			require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{Paused: &paused}))
			gs, ok := e.GroupStats("g")
			require.True(t, ok, "a paused group is not idle")
			assert.True(t, gs.Paused)
			k := newGatedTask(t, 0)
			h := submitGated(t, e, "g", "later", k, groupconc.SubmitOptions{})
			synctest.Wait()
			requireWaiting(t, h, k)
			require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{}))
			k.Release()
			quiesce(t, e, h)
		})
	})
}
