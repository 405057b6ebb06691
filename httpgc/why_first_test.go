package httpgc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// whereSubmit submits a task of key and cost, and waits for the bubble.
func whereSubmit(t *testing.T, e *groupconc.GroupExecutor, key string, cost int, work groupconc.Task[int]) *groupconc.TaskHandle[int] {
	t.Helper()
	hd, err := groupconc.SubmitWith(context.Background(), e, key, key, work, groupconc.SubmitOptions{Cost: cost})
	require.NoError(t, err)
	synctest.Wait()
	return hd
}

// wherePosition requires hd to wait at limit of group.
func wherePosition(t *testing.T, hd *groupconc.TaskHandle[int], limit, group string) {
	t.Helper()
	pos, ok := hd.Position()
	require.True(t, ok)
	require.Equal(t, [2]string{limit, group}, [2]string{pos.Limit, pos.Group})
}

// Bulkheads come before concurrency limits. A task of a/u past its own
// bulkhead waits at a's full bulkhead, while a/u's running task holds
// its concurrency too. The row names a's bulkhead, where the task waits.
func TestARowNamesAFullParentBulkheadBeforeItsOwnConcurrency(t *testing.T) {
	whyModes(t, func(t *testing.T, mode groupconc.IsolationMode) {
		e, h, work := whyExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode).ParentSeparator("/").
			PerGroupMaxConcurrency(map[string]int{"a/u": 1}).DefaultMaxConcurrencyPerGroup(5).
			PerGroupMaxInFlight(map[string]int{"a": 2}))
		whereSubmit(t, e, "a/v", 1, work)
		whereSubmit(t, e, "a/u", 1, work) // a's bulkhead and a/u's concurrency are full
		wherePosition(t, whereSubmit(t, e, "a/u", 1, work), "bulkhead", "a")
		assert.Equal(t, "parent limit: a", rowOf(t, h, "a/u")["why"])
	})
}

// A bulkhead counts permits, in-flight tasks. A costly task fills x's
// bulkhead of 4 as one task in flight. The next waits before it. The row
// cannot tell that from its counts, so it says "own limit". It does not
// name the concurrency limit the running task holds too.
func TestARowWhoseBulkheadACostlyTaskFillsNamesNoOtherLimit(t *testing.T) {
	whyModes(t, func(t *testing.T, mode groupconc.IsolationMode) {
		e, h, work := whyExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode).
			PerGroupMaxConcurrency(map[string]int{"x": 1}).PerGroupMaxInFlight(map[string]int{"x": 4}))
		whereSubmit(t, e, "x", 3, work)
		wherePosition(t, whereSubmit(t, e, "x", 3, work), "bulkhead", "x")
		assert.Equal(t, "own limit", rowOf(t, h, "x")["why"])
	})
}
