package groupconc_test

// Helpers of the tests of groups of groups: gated tasks submitted one per
// key, counted as they start, and released together.

import (
	"testing"

	"github.com/kobe/groupconc"
)

// startedCount counts the gated tasks that have started.
func startedCount(ks ...*gatedTask) (n int) {
	for _, k := range ks {
		if k.started.Load() {
			n++
		}
	}
	return n
}

// submitEach submits one gated task to each key, in order.
func submitEach(t *testing.T, e *groupconc.GroupExecutor, keys ...string) ([]*gatedTask, []*groupconc.TaskHandle[int]) {
	t.Helper()
	var ks []*gatedTask
	var hs []*groupconc.TaskHandle[int]
	for i, key := range keys {
		k := newGatedTask(t, i)
		ks = append(ks, k)
		hs = append(hs, submitGated(t, e, key, "", k, groupconc.SubmitOptions{}))
	}
	return ks, hs
}

// releaseAll lets every task end and checks every permit is back.
func releaseAll(t *testing.T, e *groupconc.GroupExecutor, ks []*gatedTask, hs []*groupconc.TaskHandle[int]) {
	t.Helper()
	for _, k := range ks {
		k.Release()
	}
	quiesce(t, e, hs...)
}
