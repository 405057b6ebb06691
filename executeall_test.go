package groupconc_test

// ExecuteAll: results in input order, validation first, no fail-fast.

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExecuteAllReturnsResultsInInputOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(3)))
		defer e.Close()
		const n = 12
		tasks := make([]groupconc.GroupTask[int], n)
		for i := range tasks {
			tasks[i] = groupconc.GroupTask[int]{
				GroupKey: fmt.Sprint("g", i%3),
				TaskID:   fmt.Sprint("t", i),
				Task: func(context.Context) (int, error) {
					time.Sleep(time.Duration(n-i) * time.Second) // later tasks finish first
					return i * 10, nil
				},
			}
		}
		results, err := groupconc.ExecuteAll(t.Context(), e, tasks)
		require.NoError(t, err)
		require.Len(t, results, n)
		for i, r := range results {
			assert.Equal(t, tasks[i].GroupKey, r.GroupKey, "results[%d]", i)
			assert.Equal(t, tasks[i].TaskID, r.TaskID, "results[%d]", i)
			assert.Equal(t, groupconc.StatusSuccess, r.Status, "results[%d]", i)
			assert.Equal(t, i*10, r.Value, "results[%d]", i)
		}
	})
}

func TestExecuteAllOfNoTasksReturnsNoResults(t *testing.T) {
	e := groupconc.New(nil)
	defer e.Close()
	results, err := groupconc.ExecuteAll[int](t.Context(), e, nil)
	assert.NoError(t, err)
	assert.Empty(t, results)
}

func TestExecuteAllDoesNotStopAtTheFirstFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		var ran atomic.Int32
		ok := func(context.Context) (int, error) { ran.Add(1); return 1, nil }
		tasks := []groupconc.GroupTask[int]{
			{GroupKey: "g", TaskID: "fail", Task: func(context.Context) (int, error) { ran.Add(1); return 0, errBoom }},
			{GroupKey: "g", TaskID: "ok1", Task: ok},
			{GroupKey: "g", TaskID: "panic", Task: func(context.Context) (int, error) { ran.Add(1); panic("x") }},
			{GroupKey: "h", TaskID: "ok2", Task: ok},
			{GroupKey: "g", TaskID: "ok3", Task: ok},
		}
		results, err := groupconc.ExecuteAll(t.Context(), e, tasks)
		require.NoError(t, err, "ExecuteAll error: failures belong in the results")
		require.Len(t, results, len(tasks))
		assert.EqualValues(t, len(tasks), ran.Load(), "tasks run")
		want := []groupconc.TaskStatus{
			groupconc.StatusFailed, groupconc.StatusSuccess, groupconc.StatusFailed,
			groupconc.StatusSuccess, groupconc.StatusSuccess,
		}
		for i, r := range results {
			assert.Equal(t, want[i], r.Status, "results[%d] (%s)", i, r.TaskID)
		}
		assert.Equal(t, errBoom, results[0].Err)
		var pe *groupconc.PanicError
		assert.ErrorAs(t, results[2].Err, &pe)
	})
}

func TestExecuteAllValidatesEveryTaskBeforeSubmittingAny(t *testing.T) {
	cases := []struct {
		name  string
		bad   groupconc.GroupTask[int]
		field string
	}{
		{"empty group key", groupconc.GroupTask[int]{TaskID: "t", Task: func(context.Context) (int, error) { return 0, nil }}, "GroupKey"},
		{"empty task ID", groupconc.GroupTask[int]{GroupKey: "g", Task: func(context.Context) (int, error) { return 0, nil }}, "TaskID"},
		{"nil task", groupconc.GroupTask[int]{GroupKey: "g", TaskID: "t"}, "Task"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := groupconc.New(nil)
				defer e.Close()
				var ran atomic.Int32
				ok := func(context.Context) (int, error) { ran.Add(1); return 1, nil }
				tasks := []groupconc.GroupTask[int]{
					{GroupKey: "g", TaskID: "a", Task: ok},
					{GroupKey: "h", TaskID: "b", Task: ok},
					c.bad,
					{GroupKey: "g", TaskID: "c", Task: ok},
				}
				results, err := groupconc.ExecuteAll(t.Context(), e, tasks)
				require.ErrorIs(t, err, groupconc.ErrInvalidTask)
				assert.Regexp(t, `\b`+c.field+`\b`, err.Error(), "error should name the field")
				assert.Nil(t, results)
				synctest.Wait()
				assert.Zero(t, e.Stats().Submitted, "Stats.Submitted after a rejected batch")
				assert.Zero(t, e.Stats().Groups, "Stats.Groups after a rejected batch")
				assert.Zero(t, ran.Load(), "tasks run from a rejected batch")
			})
		})
	}
}

func TestExecuteAllContextEndingMidwayCancelsUnfinishedAndKeepsFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		defer e.Close()
		gate := make(chan struct{})
		defer close(gate)
		var queuedRan atomic.Bool
		tasks := []groupconc.GroupTask[int]{
			{GroupKey: "a", TaskID: "quick", Task: func(context.Context) (int, error) {
				time.Sleep(time.Second)
				return 1, nil
			}},
			{GroupKey: "b", TaskID: "stuck", Task: gated(gate, 2)}, // ignores its context
			{GroupKey: "b", TaskID: "queued", Task: neverRuns(&queuedRan)},
			{GroupKey: "c", TaskID: "fails", Task: func(context.Context) (int, error) {
				time.Sleep(time.Second / 2)
				return 0, errBoom
			}},
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		start := time.Now()
		results, err := groupconc.ExecuteAll(ctx, e, tasks)
		assert.Equal(t, 2*time.Second, time.Since(start), "ExecuteAll returned after")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		require.Len(t, results, len(tasks))
		assert.Equal(t, groupconc.StatusSuccess, results[0].Status, "finished task keeps its result")
		assert.Equal(t, 1, results[0].Value)
		assert.Equal(t, groupconc.StatusCancelled, results[1].Status, "running task")
		assert.Equal(t, groupconc.StatusCancelled, results[2].Status, "queued task")
		assert.Equal(t, groupconc.StatusFailed, results[3].Status, "finished task keeps its result")
		assert.Equal(t, errBoom, results[3].Err)
		for i, r := range results {
			assert.Equal(t, tasks[i].TaskID, r.TaskID, "results[%d]", i)
		}
		synctest.Wait()
		assert.False(t, queuedRan.Load(), "queued task ran after ExecuteAll's context ended")
	})
}

func TestExecuteAllReportsAnAbortRejectionAsAResultNotAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustBuild(t, groupconc.NewPolicyBuilder().
			DefaultQueueThresholdPerGroup(0).RejectionPolicy(groupconc.RejectAbort))
		e := groupconc.New(p)
		defer e.Close()
		var ran atomic.Bool
		tasks := []groupconc.GroupTask[int]{
			{GroupKey: "g", TaskID: "first", Task: func(context.Context) (int, error) {
				time.Sleep(time.Second)
				return 1, nil
			}},
			{GroupKey: "g", TaskID: "second", Task: neverRuns(&ran)},
		}
		results, err := groupconc.ExecuteAll(t.Context(), e, tasks)
		require.NoError(t, err)
		require.Len(t, results, 2)
		assert.Equal(t, groupconc.StatusSuccess, results[0].Status)
		assert.Equal(t, groupconc.StatusRejected, results[1].Status)
		var rej *groupconc.RejectedError
		assert.ErrorAs(t, results[1].Err, &rej)
		assert.False(t, ran.Load(), "rejected task ran")
	})
}
