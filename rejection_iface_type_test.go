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

// A RejectionHandler's value of the wrong type fails the task with an
// error naming both types. For a task whose type is an interface, such as
// httplimit's http.Handler, the error named it "<nil>", the type of a nil
// interface value.
func TestRejectionHandlerWrongTypeNamesAnInterfaceTaskType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		handler := func(context.Context, *groupconc.Rejection) (any, error) { return 42, nil }
		e := newExecutor(t, builder().DefaultQueueThresholdPerGroup(0).RejectionHandler(handler))
		hold := newGatedTask(t, 0)
		hh := submitGated(t, e, "g", "hold", hold, groupconc.SubmitOptions{})
		synctest.Wait()

		h, err := groupconc.Submit(t.Context(), e, "g", "turned-away", func(context.Context) (fmt.Stringer, error) {
			return nil, nil
		})
		require.NoError(t, err)
		r := h.Wait()
		assert.Equal(t, groupconc.StatusFailed, r.Status)
		require.Error(t, r.Err)
		assert.Contains(t, r.Err.Error(), "returned int", "the error should name the type returned")
		assert.Contains(t, r.Err.Error(), "want fmt.Stringer", "the error should name the task's type")

		_, err = groupconc.Do(t.Context(), e, "g", func(context.Context) (fmt.Stringer, error) {
			return nil, nil
		}, groupconc.SubmitOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "want fmt.Stringer", "Do: the error should name fn's type")

		hold.Release()
		quiesce(t, e, hh)
	})
}
