package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// requireTurnedAway requires h to have ended REJECTED for reason, as under
// RejectDiscard: Await returns no error, and OnRejected was told.
func requireTurnedAway(t *testing.T, h *groupconc.TaskHandle[int], rec *recorder, key, reason string) {
	t.Helper()
	r, err := h.Await(t.Context())
	require.Equal(t, groupconc.StatusRejected, r.Status, "task %s", h.TaskID())
	assert.NoError(t, err, "Await of a task turned away under RejectDiscardOldest")
	var re *groupconc.RejectedError
	require.ErrorAs(t, r.Err, &re)
	assert.Equal(t, reason, re.Reason)
	assert.Equal(t, reason, rec.Reason(key, h.TaskID()))
}

func TestDiscardOldestDisplacesNobodyWhileACallerIsBlockedOnTheQueue(t *testing.T) {
	cases := []struct {
		name   string
		policy *groupconc.PolicyBuilder
		reason string
	}{
		{"group queue", builder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(1), groupconc.ReasonGroupQueueFull},
		{"global queue", builder().GlobalMaxInFlight(1).GlobalQueueThreshold(1), groupconc.ReasonGlobalQueueFull},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := newRecorder()
				e := newExecutor(t, tc.policy.RejectionPolicy(groupconc.RejectDiscardOldest).TaskLifecycleListener(rec))
				k := newGatedTask(t, 1)
				run := submit(t, t.Context(), e, "a", "run", k.Fn)
				wait := submit(t, t.Context(), e, "a", "wait", succeed)
				synctest.Wait()
				ctx, cancel := context.WithCancel(t.Context())
				c := submitBlocking(ctx, e, "a", "c", succeed, groupconc.SubmitOptions{})
				synctest.Wait()
				require.False(t, c.returned(), "the queue is full: c blocks")

				// d would displace wait, and so take the slot c waits for.
				d := submit(t, t.Context(), e, "a", "d", succeed)
				require.True(t, d.IsDone(), "d is turned away at once")
				requireTurnedAway(t, d, rec, "a", tc.reason)
				assert.False(t, wait.IsDone(), "a caller is blocked: nothing is displaced")
				assert.Equal(t, uint64(1), e.Stats().Rejected)

				// With nobody blocked, the policy displaces as before.
				cancel()
				synctest.Wait()
				require.True(t, c.returned())
				require.ErrorIs(t, c.err, context.Canceled)
				f := submit(t, t.Context(), e, "a", "f", succeed)
				requireTurnedAway(t, wait, rec, "a", groupconc.ReasonDisplaced)
				k.Release()
				quiesce(t, e, run, f)
			})
		})
	}
}
