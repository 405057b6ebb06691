package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A batch task whose group has a cycle of parents is refused alone, as a
// task of a stopped group is: the others run (no fail-fast). The batch
// returns the error Submit would.
func TestExecuteAllGoesOnPastATaskWithACycleOfParents(t *testing.T) {
	parents := map[string]string{"x": "y", "y": "x"}
	for name, run := range map[string]func(context.Context, *groupconc.GroupExecutor, []groupconc.GroupTask[int]) ([]groupconc.GroupResult[int], error){
		"ExecuteAll": groupconc.ExecuteAll[int],
		"ExecuteAllWith": func(ctx context.Context, e *groupconc.GroupExecutor, ts []groupconc.GroupTask[int]) ([]groupconc.GroupResult[int], error) {
			return groupconc.ExecuteAllWith(ctx, e, ts, groupconc.SubmitOptions{Block: true})
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, builder().ParentResolver(func(k string) string { return parents[k] }))
				ret := func(v int) groupconc.Task[int] { return func(context.Context) (int, error) { return v, nil } }
				rs, err := run(t.Context(), e, []groupconc.GroupTask[int]{
					{GroupKey: "a", TaskID: "a1", Task: ret(1)},
					{GroupKey: "x", TaskID: "x1", Task: ret(2)},
					{GroupKey: "b", TaskID: "b1", Task: ret(3)},
				})
				require.ErrorIs(t, err, groupconc.ErrInvalidPolicy, "the batch reports the chain, as Submit does")
				require.Len(t, rs, 3)
				assert.Equal(t, [2]any{groupconc.StatusSuccess, 1}, [2]any{rs[0].Status, rs[0].Value})
				assert.Equal(t, groupconc.StatusCancelled, rs[1].Status)
				assert.ErrorIs(t, rs[1].Err, groupconc.ErrInvalidPolicy)
				assert.Contains(t, rs[1].Err.Error(), "cycle")
				assert.Equal(t, [2]any{groupconc.StatusSuccess, 3}, [2]any{rs[2].Status, rs[2].Value}, "the task after it runs")
			})
		})
	}
}
