package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A task handed a permit is in no line until it is carried on, after the
// listener of the task that handed it returns. A limit lowered or a pause
// made there must hold it back as it would in a line: it goes back to the
// head of the line of the layer over its limit. Each case fails if the
// handed task's walk takes the rest of its layers as they come.
func TestALimitLoweredBeforeAHandedTaskWalksOnSendsItBack(t *testing.T) {
	paused, one := true, 1
	for _, tc := range []struct {
		name   string
		mode   groupconc.IsolationMode
		global int
		change func(t *testing.T, e *groupconc.GroupExecutor) error // made as x ends
		undo   func(e *groupconc.GroupExecutor) error               // or release "r"
	}{
		{"global lowered, IsolationOff", groupconc.IsolationOff, 2, func(t *testing.T, e *groupconc.GroupExecutor) error {
			return e.UpdatePolicy(mustBuild(t, groupconc.NewPolicyBuilder().GlobalMaxInFlight(1).PerGroupMaxConcurrency(map[string]int{"a": 2})))
		}, nil},
		{"concurrency lowered, fair share", groupconc.IsolationFairShare, 4, func(_ *testing.T, e *groupconc.GroupExecutor) error {
			return e.SetGroupOverride("a", groupconc.GroupOverride{MaxConcurrency: &one})
		}, nil},
		{"paused, fair share", groupconc.IsolationFairShare, 4, func(_ *testing.T, e *groupconc.GroupExecutor) error {
			return e.SetGroupOverride("a", groupconc.GroupOverride{Paused: &paused})
		}, func(e *groupconc.GroupExecutor) error { return e.SetGroupOverride("a", groupconc.GroupOverride{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var e *groupconc.GroupExecutor
				l := groupconc.ListenerFuncs{Completed: func(_, id string, _ groupconc.GroupResult[any]) {
					if id == "x" {
						assert.NoError(t, tc.change(t, e))
					}
				}}
				e = newExecutor(t, groupconc.NewPolicyBuilder().Isolation(tc.mode).GlobalMaxInFlight(tc.global).
					PerGroupMaxConcurrency(map[string]int{"a": 2}).TaskLifecycleListener(l))
				g := upNewGated()
				// Under IsolationOff x's global permit goes to w, which walks
				// on to a's concurrency limit. Under fair share x's permit of
				// a's concurrency limit goes to w, which walks on to the
				// global cap.
				for _, id := range []string{"r", "x", "w"} {
					key := "a"
					if tc.mode == groupconc.IsolationOff && id != "w" {
						key = id
					}
					g.submit(t, e, key, id)
					synctest.Wait()
				}
				require.False(t, g.started("w"))
				g.release("x")
				assert.False(t, g.started("w"), "w started after the change, with r running")
				if tc.undo != nil {
					require.NoError(t, tc.undo(e))
					synctest.Wait()
				} else {
					g.release("r")
				}
				assert.True(t, g.started("w"), "w never started")
				g.finish(t, e)
			})
		})
	}
}

// The same with a parent and a cost: w, of cost 2, is handed the permits
// of its group's concurrency limit and walks on to its parent's. A lowered
// limit of its group sends it back there until the count is below it.
func TestALimitLoweredBeforeACostlyHandedTaskWalksOnToItsParentSendsItBack(t *testing.T) {
	upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
		var e *groupconc.GroupExecutor
		two := 2
		l := groupconc.ListenerFuncs{Completed: func(_, id string, _ groupconc.GroupResult[any]) {
			if id == "x" {
				assert.NoError(t, e.SetGroupOverride("t/u", groupconc.GroupOverride{MaxConcurrency: &two}))
			}
		}}
		e = newExecutor(t, b().ParentSeparator("/").PerGroupMaxConcurrency(map[string]int{"t/u": 4, "t": 10}).TaskLifecycleListener(l))
		g := upNewGated()
		for _, id := range []string{"r", "x", "w"} {
			g.submitWith(t, e, "t/u", id, groupconc.SubmitOptions{Cost: 2})
			synctest.Wait()
		}
		require.False(t, g.started("w"))
		g.release("x")
		assert.False(t, g.started("w"), "w started with t/u lowered to 2 while r holds 2")
		assert.Equal(t, 2, groupStats(t, e, "t/u").RunningCost, "t/u's running cost")
		g.release("r")
		assert.True(t, g.started("w"), "w never started")
		g.finish(t, e)
	})
}
