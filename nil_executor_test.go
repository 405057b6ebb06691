package groupconc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// TestEveryCallOnANilOrZeroExecutorActsAsOnAClosedOne: no call panics; a
// call that returns an error returns one matching ErrClosed, and the
// others do nothing or report nothing.
func TestEveryCallOnANilOrZeroExecutorActsAsOnAClosedOne(t *testing.T) {
	ctx := context.Background()
	fn := func(context.Context) (int, error) { return 1, nil }
	batch := []groupconc.GroupTask[int]{{GroupKey: "g", TaskID: "t", Task: fn}}
	p := mustBuild(t, groupconc.NewPolicyBuilder())
	for name, e := range map[string]*groupconc.GroupExecutor{"nil": nil, "zero": {}} {
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				call string
				err  func() error
			}{
				{"Submit", func() error { _, err := groupconc.Submit(ctx, e, "g", "t", fn); return err }},
				{"SubmitWith", func() error {
					_, err := groupconc.SubmitWith(ctx, e, "g", "t", fn, groupconc.SubmitOptions{Block: true})
					return err
				}},
				{"ExecuteAll", func() error { _, err := groupconc.ExecuteAll(ctx, e, batch); return err }},
				{"ExecuteAllWith", func() error {
					_, err := groupconc.ExecuteAllWith(ctx, e, batch, groupconc.SubmitOptions{})
					return err
				}},
				{"Do", func() error {
					v, err := groupconc.Do(ctx, e, "g", fn, groupconc.SubmitOptions{})
					assert.Zero(t, v, "Do's value")
					return err
				}},
				{"UpdatePolicy", func() error { return e.UpdatePolicy(p) }},
				{"Shutdown", func() error { return e.Shutdown(ctx) }},
				{"Close", func() error { return e.Close() }},
				{"SetGroupOverride", func() error { return e.SetGroupOverride("g", groupconc.GroupOverride{}) }},
				{"GuardOverrides", func() error {
					remove, err := e.GuardOverrides(func(string, groupconc.GroupOverride) error { return nil })
					assert.Nil(t, remove)
					return err
				}},
			} {
				var err error
				require.NotPanics(t, func() { err = c.err() }, c.call)
				assert.ErrorIs(t, err, groupconc.ErrClosed, c.call)
			}
			require.NotPanics(t, func() {
				e.ShutdownGroup("g")
				e.EvictGroup("g")
				assert.Nil(t, e.Policy(), "Policy")
				assert.Equal(t, groupconc.ExecutorStats{}, e.Stats(), "Stats")
				_, ok := e.GroupStats("g")
				assert.False(t, ok, "GroupStats")
				for range e.AllGroupStats() {
					t.Error("AllGroupStats yields a group")
				}
				_, ok = e.ExplainGroup("g")
				assert.False(t, ok, "ExplainGroup")
				_, ok = e.GroupOverride("g")
				assert.False(t, ok, "GroupOverride")
				for range e.GroupOverrides() {
					t.Error("GroupOverrides yields an override")
				}
				for range e.ActiveGroupStats() {
					t.Error("ActiveGroupStats yields a group")
				}
				stop := e.WatchPressure(func(groupconc.PressureWarning) {})
				require.NotNil(t, stop, "WatchPressure's stop")
				stop()
			})
		})
	}
}
