package groupconc_test

import (
	"context"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// justExpired is a caller's context at the instant its deadline passes,
// before its timer has fired: the deadline is behind it, its Err is nil.
type justExpired struct{ context.Context }

func (justExpired) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// A context derived from the task's, with its deadline, has a timer of its
// own, which may fire a moment before the task's context ends. Its error,
// returned once the deadline has passed, is the task's end by that
// deadline: CANCELLED, not FAILED. The same error before the deadline is
// FAILED (TestTaskOutcomeFollowsWhatTheFunctionReturns).
func TestDeadlineExceededOnceTheDeadlineHasPassedIsCancelled(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		p, err := groupconc.NewPolicyBuilder().Isolation(mode).Build()
		require.NoError(t, err)
		e := groupconc.New(p)
		defer e.Close()
		expired := func(context.Context) (int, error) { return 0, context.DeadlineExceeded }
		caller := justExpired{context.Background()}

		h, err := groupconc.Submit(caller, e, "g", "t", expired)
		require.NoError(t, err)
		r := h.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.ErrorIs(t, r.Err, context.DeadlineExceeded)

		_, err = groupconc.Do(caller, e, "g", expired, groupconc.SubmitOptions{})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		st, _ := e.GroupStats("g")
		assert.Equal(t, uint64(2), st.Cancelled, "the task and the Do")
		assert.Zero(t, st.Failed)
	})
}
