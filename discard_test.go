package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// discardOldest builds an executor under RejectDiscardOldest whose group
// "a" runs one gated task and has room for two waiting ones.
func discardOldest(t *testing.T, mode groupconc.IsolationMode, rec *recorder) (*groupconc.GroupExecutor, *gatedTask, *groupconc.TaskHandle[int]) {
	t.Helper()
	e := newExecutor(t, modeBuilder(mode).RejectionPolicy(groupconc.RejectDiscardOldest).
		DefaultQueueThresholdPerGroup(2).TaskLifecycleListener(rec))
	k := newGatedTask(t, 0)
	h := submit(t, t.Context(), e, "a", "run", k.Fn)
	synctest.Wait()
	return e, k, h
}

func requireDisplaced(t *testing.T, h *groupconc.TaskHandle[int], rec *recorder) {
	t.Helper()
	r, err := h.Await(t.Context())
	require.Equal(t, groupconc.StatusRejected, r.Status, "task %s", h.TaskID())
	assert.NoError(t, err, "Await of a displaced task")
	var re *groupconc.RejectedError
	require.ErrorAs(t, r.Err, &re)
	assert.Equal(t, groupconc.ReasonDisplaced, re.Reason)
	assert.Equal(t, groupconc.ReasonDisplaced, rec.Reason("a", h.TaskID()))
}

func TestDiscardOldestDisplacesTheOldestOfTheLowestPriority(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e, k, run := discardOldest(t, mode, rec)
			var log startLog
			low1 := submitPrio(t, e, "a", "low1", groupconc.PriorityLow, log.task("low1"))
			low2 := submitPrio(t, e, "a", "low2", groupconc.PriorityLow, log.task("low2"))
			n := submitPrio(t, e, "a", "n", groupconc.PriorityNormal, log.task("n"))
			synctest.Wait()
			requireDisplaced(t, low1, rec)
			assert.False(t, low2.IsDone())
			gs, _ := e.GroupStats("a")
			assert.Equal(t, 2, gs.Waiting)
			k.Release()
			quiesce(t, e, run, low2, n)
			assert.Equal(t, []string{"n", "low2"}, log.order())
			assert.Equal(t, uint64(1), e.Stats().Rejected)
		})
	})
}

func TestDiscardOldestRejectsANewTaskWhenEveryWaitingOneIsHigher(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e, k, run := discardOldest(t, mode, rec)
			h1 := submitPrio(t, e, "a", "h1", groupconc.PriorityHigh, succeed)
			h2 := submitPrio(t, e, "a", "h2", groupconc.PriorityHigh, succeed)
			low := submitPrio(t, e, "a", "low", groupconc.PriorityLow, succeed)
			r, err := low.Await(t.Context())
			assert.Equal(t, groupconc.StatusRejected, r.Status)
			assert.NoError(t, err, "rejected as under RejectDiscard")
			assert.Equal(t, groupconc.ReasonGroupQueueFull, rec.Reason("a", "low"))
			// One of the same priority displaces the oldest of them.
			h3 := submitPrio(t, e, "a", "h3", groupconc.PriorityHigh, succeed)
			requireDisplaced(t, h1, rec)
			k.Release()
			quiesce(t, e, run, h2, h3)
		})
	})
}

func TestDiscardOldestDisplacesFromTheGlobalQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		e := newExecutor(t, builder().RejectionPolicy(groupconc.RejectDiscardOldest).
			GlobalMaxInFlight(1).GlobalQueueThreshold(1).TaskLifecycleListener(rec))
		k := newGatedTask(t, 0)
		run := submit(t, t.Context(), e, "x", "run", k.Fn)
		old := submitPrio(t, e, "a", "old", groupconc.PriorityNormal, succeed)
		n := submitPrio(t, e, "b", "new", groupconc.PriorityNormal, succeed)
		r, err := old.Await(t.Context())
		require.NoError(t, err)
		assert.Equal(t, groupconc.StatusRejected, r.Status)
		assert.Equal(t, groupconc.ReasonDisplaced, rec.Reason("a", "old"))
		k.Release()
		quiesce(t, e, run, n)
		assert.Equal(t, groupconc.StatusSuccess, n.Wait().Status)
	})
}

func TestARejectionHandlerReplacesDiscardOldest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var turned []string
		e := newExecutor(t, builder().RejectionPolicy(groupconc.RejectDiscardOldest).DefaultQueueThresholdPerGroup(1).
			RejectionHandler(func(_ context.Context, r *groupconc.Rejection) (any, error) {
				turned = append(turned, r.TaskID)
				return 5, nil
			}))
		k := newGatedTask(t, 0)
		run := submit(t, t.Context(), e, "a", "run", k.Fn)
		w := submit(t, t.Context(), e, "a", "w", succeed)
		n := submit(t, t.Context(), e, "a", "n", succeed)
		assert.Equal(t, 5, n.Wait().Value)
		assert.False(t, w.IsDone())
		k.Release()
		quiesce(t, e, run, w)
		assert.Equal(t, []string{"n"}, turned)
	})
}

func TestRejectDiscardOldestString(t *testing.T) {
	assert.Equal(t, "RejectDiscardOldest", groupconc.RejectDiscardOldest.String())
	_, err := groupconc.NewPolicyBuilder().RejectionPolicy(groupconc.RejectDiscardOldest).Build()
	require.NoError(t, err)
}
