package groupconc_test

// A nil or zero TaskHandle: no call panics or hangs, and the misuse shows
// as an error.

import (
	"context"
	"reflect"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// TestANilOrZeroTaskHandleActsAsTheHandleOfNoTask: it is complete, CANCELLED
// with an error matching ErrInvalidTask, and nothing panics or waits. The
// bubble turns a wait that never ends into a failure.
func TestANilOrZeroTaskHandleActsAsTheHandleOfNoTask(t *testing.T) {
	closed := groupconc.New(nil)
	require.NoError(t, closed.Close())
	fromFailedSubmit, err := groupconc.Submit(t.Context(), closed, "g", "t",
		func(context.Context) (int, error) { return 1, nil })
	require.ErrorIs(t, err, groupconc.ErrClosed)

	for name, h := range map[string]*groupconc.TaskHandle[int]{
		"nil":                nil,
		"zero":               new(groupconc.TaskHandle[int]),
		"from failed Submit": fromFailedSubmit,
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { handleOfNoTask(t, h) })
		})
	}
}

// handleOfNoTask checks every method of h, a handle of no task.
func handleOfNoTask(t *testing.T, h *groupconc.TaskHandle[int]) {
	require.NotPanics(t, func() {
		assert.Empty(t, h.GroupKey(), "GroupKey")
		assert.Empty(t, h.TaskID(), "TaskID")
		assert.True(t, h.IsDone(), "IsDone")
		select {
		case <-h.Done():
		default:
			t.Error("Done is not closed")
		}
		assert.False(t, h.Cancel(), "Cancel")
		_, ok := h.Position()
		assert.False(t, ok, "Position")

		r := h.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status, "Wait's status")
		assert.ErrorIs(t, r.Err, groupconc.ErrInvalidTask, "Wait's Err")
		assert.ErrorContains(t, r.Err, "TaskHandle", "Wait's Err")
		assert.True(t, r.Submitted.IsZero() && r.Start.IsZero() && r.End.IsZero(), "times %+v", r)

		for _, ctx := range []context.Context{t.Context(), nil} {
			r, err := h.Await(ctx)
			assert.Equal(t, groupconc.StatusCancelled, r.Status, "Await's status")
			assert.ErrorIs(t, r.Err, groupconc.ErrInvalidTask, "Await's Err")
			assert.ErrorIs(t, err, groupconc.ErrInvalidTask, "Await's error")
		}
	})
}

// TestEveryMethodOfANilTaskHandleReturns calls each exported method, so a
// method added later is covered too.
func TestEveryMethodOfANilTaskHandleReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, h := range []*groupconc.TaskHandle[int]{nil, new(groupconc.TaskHandle[int])} {
			v := reflect.ValueOf(h)
			for i := range v.NumMethod() {
				m := v.Method(i)
				args := make([]reflect.Value, m.Type().NumIn())
				for j := range args {
					args[j] = reflect.Zero(m.Type().In(j))
				}
				assert.NotPanics(t, func() { m.Call(args) }, "%T.%s", h, v.Type().Method(i).Name)
			}
		}
	})
}
