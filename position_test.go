package groupconc_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// position returns where h waits; the test fails if it does not wait.
func position(t *testing.T, h *groupconc.TaskHandle[int]) groupconc.WaitPosition {
	t.Helper()
	p, ok := h.Position()
	require.True(t, ok, "task %s does not wait", h.TaskID())
	return p
}

func TestPositionNamesTheLimitAndCountsTheTasksAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder()) // a limit of 1 a group
		k := newGatedTask(t, 0)
		run := submit(t, t.Context(), e, "a", "run", k.Fn)
		synctest.Wait()
		_, ok := run.Position()
		assert.False(t, ok, "a running task waits nowhere")
		second := submit(t, t.Context(), e, "a", "second", k.Fn)
		third := submit(t, t.Context(), e, "a", "third", k.Fn)
		assert.Equal(t, groupconc.WaitPosition{Limit: "concurrency", Group: "a", Ahead: 0}, position(t, second))
		assert.Equal(t, groupconc.WaitPosition{Limit: "concurrency", Group: "a", Ahead: 1}, position(t, third))
		urgent, err := groupconc.SubmitWith(t.Context(), e, "a", "urgent", k.Fn, groupconc.SubmitOptions{Priority: groupconc.PriorityHigh})
		require.NoError(t, err)
		assert.Equal(t, 0, position(t, urgent).Ahead, "a higher priority is served first")
		assert.Equal(t, 2, position(t, third).Ahead)
		k.Release()
		quiesce(t, e, run, second, third, urgent)
		_, ok = third.Position()
		assert.False(t, ok, "an ended task waits nowhere")
	})
}

func TestPositionTellsTheGlobalCapBulkheadAndPause(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).GlobalMaxInFlight(1).
				DefaultMaxConcurrencyPerGroup(2).PerGroupMaxInFlight(map[string]int{"bulk": 1}))
			k := newGatedTask(t, 0)
			run := submit(t, t.Context(), e, "a", "run", k.Fn)
			synctest.Wait()
			b1 := submit(t, t.Context(), e, "b", "b1", k.Fn)
			b2 := submit(t, t.Context(), e, "b", "b2", k.Fn)
			a2 := submit(t, t.Context(), e, "a", "a2", k.Fn)
			assert.Equal(t, groupconc.WaitPosition{Limit: "global", Ahead: 0}, position(t, b1), "b2 and a2 come after it")
			want := 2 // IsolationOff: one line for every group, in arrival order
			if mode == groupconc.IsolationFairShare {
				want = 0 // a2 is a's, not b's
			}
			assert.Equal(t, want, position(t, a2).Ahead)
			assert.Equal(t, 1, position(t, b2).Ahead)

			bulk := submit(t, t.Context(), e, "bulk", "bulk1", k.Fn)
			bulk2 := submit(t, t.Context(), e, "bulk", "bulk2", k.Fn)
			if mode == groupconc.IsolationFairShare {
				// The group's limits come first: bulk1 holds the bulkhead
				// while it waits for the global cap.
				assert.Equal(t, groupconc.WaitPosition{Limit: "bulkhead", Group: "bulk", Ahead: 0}, position(t, bulk2))
			} else {
				// The global cap comes first.
				assert.Equal(t, groupconc.WaitPosition{Limit: "global", Ahead: 4}, position(t, bulk2))
			}

			paused := true
			require.NoError(t, e.SetGroupOverride("b", groupconc.GroupOverride{Paused: &paused}))
			b3 := submit(t, t.Context(), e, "b", "b3", k.Fn)
			assert.Equal(t, "paused", position(t, b3).Limit)
			require.NoError(t, e.SetGroupOverride("b", groupconc.GroupOverride{}))
			k.Release()
			quiesce(t, e, run, b1, b2, a2, bulk, bulk2, b3)
		})
	})
}

// Position names the ancestor whose limit a task waits for.
func TestPositionNamesTheAncestor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().ParentSeparator("/").DefaultMaxConcurrencyPerGroup(2).
			PerGroupMaxConcurrency(map[string]int{"acme": 1}))
		k := newGatedTask(t, 0)
		run := submit(t, t.Context(), e, "acme/u1", "run", k.Fn)
		next := submit(t, t.Context(), e, "acme/u2", "next", k.Fn)
		assert.Equal(t, groupconc.WaitPosition{Limit: "concurrency", Group: "acme", Ahead: 0}, position(t, next))
		k.Release()
		quiesce(t, e, run, next)
	})
}

func ExampleTaskHandle_Position() {
	p, _ := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).Build()
	e := groupconc.New(p)
	defer e.Close()
	release := make(chan struct{})
	work := func(context.Context) (int, error) { <-release; return 0, nil }
	first, _ := groupconc.Submit(context.Background(), e, "acme", "first", work)
	second, _ := groupconc.Submit(context.Background(), e, "acme", "second", work)
	third, _ := groupconc.Submit(context.Background(), e, "acme", "third", work)
	pos, _ := third.Position()
	fmt.Printf("%s waits for its group's %s limit, %d ahead\n", third.TaskID(), pos.Limit, pos.Ahead)
	close(release)
	first.Wait()
	second.Wait()
	third.Wait()
	// Output: third waits for its group's concurrency limit, 1 ahead
}
