package groupconc_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// fuzzCheckOutcomes checks each task's result against what its function did:
// a function that ran to its end decides the result unless Cancel won first.
func fuzzCheckOutcomes(t *testing.T, o *oracle, tasks []*fuzzTask) {
	t.Helper()
	for _, ft := range tasks {
		res := ft.h.Wait()
		l, _ := o.rec.lookup(ft.h.GroupKey(), ft.h.TaskID())
		ran := slices.Contains(l.seq(), oracleStarted)
		assert.NotContains(t, fmt.Sprint(res.Err), "idle group forgotten", "a task ended by its group being forgotten")
		switch {
		case ft.cancelled:
			assert.Equal(t, groupconc.StatusCancelled, res.Status, "Cancel won")
			assert.Equal(t, context.Canceled, res.Err)
		case ft.do == fuzzDoPreCancelled:
			assert.Equal(t, groupconc.StatusCancelled, res.Status)
			assert.False(t, ran, "a task with a done context never runs")
		case !ran:
			assert.Contains(t, []groupconc.TaskStatus{groupconc.StatusCancelled, groupconc.StatusRejected, groupconc.StatusSuccess, groupconc.StatusFailed}, res.Status)
			if !o.handler {
				assert.Contains(t, []groupconc.TaskStatus{groupconc.StatusCancelled, groupconc.StatusRejected}, res.Status, "a task that never ran")
			}
		case ft.do == fuzzDoSucceed:
			assert.Equal(t, groupconc.StatusSuccess, res.Status)
			assert.Equal(t, 1, res.Value)
		case ft.do == fuzzDoFail:
			assert.Equal(t, groupconc.StatusFailed, res.Status)
			assert.ErrorIs(t, res.Err, fuzzError{}, "the task's own error, unwrapped")
		case ft.do == fuzzDoPanic, ft.do == fuzzDoGoexit:
			assert.Equal(t, groupconc.StatusFailed, res.Status)
			var pe *groupconc.PanicError
			assert.ErrorAs(t, res.Err, &pe)
		case ft.do == fuzzDoBlock:
			assert.Equal(t, groupconc.StatusSuccess, res.Status, "it ignores its context")
		default: // blockCtx, sleep: finished or cancelled
			assert.Contains(t, []groupconc.TaskStatus{groupconc.StatusSuccess, groupconc.StatusCancelled}, res.Status)
		}
	}
}
