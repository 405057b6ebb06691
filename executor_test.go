package groupconc_test

// The executor's own calls: Submit, Shutdown and Close, and how they race.

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

func TestSubmitRejectsAnInvalidTaskNamingTheField(t *testing.T) {
	ok := func(context.Context) (int, error) { return 1, nil }
	cases := []struct {
		name, key, id string
		task          groupconc.Task[int]
		field         string
	}{
		{"empty group key", "", "t", ok, "GroupKey"},
		{"empty task ID", "g", "", ok, "TaskID"},
		{"nil task", "g", "t", nil, "Task"},
	}
	for _, c := range cases {
		for _, with := range []bool{false, true} {
			t.Run(fmt.Sprint(c.name, "/SubmitWith=", with), func(t *testing.T) {
				e := groupconc.New(nil)
				defer e.Close()
				submit := groupconc.Submit[int]
				if with {
					submit = func(ctx context.Context, e *groupconc.GroupExecutor, key, id string, task groupconc.Task[int]) (*groupconc.TaskHandle[int], error) {
						return groupconc.SubmitWith(ctx, e, key, id, task, groupconc.SubmitOptions{})
					}
				}
				h, err := submit(t.Context(), e, c.key, c.id, c.task)
				assert.Nil(t, h)
				require.ErrorIs(t, err, groupconc.ErrInvalidTask)
				assert.Regexp(t, `\b`+c.field+`\b`, err.Error(), "error should name the field")
				assert.Zero(t, e.Stats().Submitted, "Stats.Submitted")
			})
		}
	}
}

func TestSubmitAfterShutdownOrCloseReturnsErrClosed(t *testing.T) {
	stops := map[string]func(e *groupconc.GroupExecutor) error{
		"Shutdown": func(e *groupconc.GroupExecutor) error { return e.Shutdown(context.Background()) },
		"Close":    func(e *groupconc.GroupExecutor) error { return e.Close() },
	}
	for name, stop := range stops {
		t.Run(name, func(t *testing.T) {
			e := groupconc.New(nil)
			require.NoError(t, stop(e))
			var ran atomic.Bool
			h, err := groupconc.Submit(t.Context(), e, "g", "t", neverRuns(&ran))
			assert.Nil(t, h)
			assert.ErrorIs(t, err, groupconc.ErrClosed)
			assert.False(t, ran.Load(), "task ran after %s", name)
			assert.Zero(t, e.Stats().Submitted, "Stats.Submitted")
		})
	}
}

func TestSubmitNeverBlocksOnPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().GlobalMaxInFlight(1)))
		defer e.Close()
		gate := make(chan struct{})
		hs := make([]*groupconc.TaskHandle[int], 100)
		// If Submit waited for a permit, the bubble would deadlock here.
		for i := range hs {
			hs[i] = submit(t, t.Context(), e, "g", fmt.Sprint(i), gated(gate, i))
		}
		synctest.Wait()
		gs, ok := e.GroupStats("g")
		require.True(t, ok)
		assert.Equal(t, 1, gs.Running)
		assert.Equal(t, 99, gs.Waiting)
		close(gate)
		for i, h := range hs {
			r := h.Wait()
			assert.Equal(t, groupconc.StatusSuccess, r.Status)
			assert.Equal(t, i, r.Value)
		}
	})
}

func TestSubmitTaskContextCarriesCallerValuesDeadlineAndCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		deadline := time.Now().Add(time.Hour)
		ctx, cancel := context.WithDeadline(context.WithValue(t.Context(), ctxKey{}, "tenant-7"), deadline)
		defer cancel()
		var (
			value       any
			gotDeadline time.Time
			hasDeadline bool
			sawCancel   atomic.Bool
		)
		h := submit(t, ctx, e, "g", "t", func(ctx context.Context) (int, error) {
			value = ctx.Value(ctxKey{})
			gotDeadline, hasDeadline = ctx.Deadline()
			<-ctx.Done()
			sawCancel.Store(true)
			return 0, ctx.Err()
		})
		synctest.Wait()
		assert.False(t, sawCancel.Load(), "task context done before the caller's was cancelled")
		cancel()
		r := h.Wait()
		assert.True(t, sawCancel.Load(), "cancelling the caller's context should cancel the task")
		assert.Equal(t, "tenant-7", value, "value from the caller's context")
		assert.True(t, hasDeadline, "task context should carry the caller's deadline")
		assert.True(t, gotDeadline.Equal(deadline), "deadline %v, want %v", gotDeadline, deadline)
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.ErrorIs(t, r.Err, context.Canceled)
	})
}

// A context derived from one with a deadline reports DeadlineExceeded once
// that deadline passes (the context.Context contract); so must the task's.
func TestSubmitTaskContextEndsWithDeadlineExceededWhenTheCallerDeadlinePasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		var taskErr error
		h := submit(t, ctx, e, "g", "t", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			taskErr = ctx.Err()
			return 0, ctx.Err()
		})
		r := h.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.ErrorIs(t, taskErr, context.DeadlineExceeded, "task ctx.Err() after the caller's deadline")
		assert.ErrorIs(t, r.Err, context.DeadlineExceeded, "result Err after the caller's deadline")
	})
}

func TestSubmitWithADoneContextCompletesCancelledWithoutRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(allLayersPolicy(t))
		defer e.Close()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		var ran atomic.Bool
		h := submit(t, ctx, e, "g", "t", neverRuns(&ran))
		r := h.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.ErrorIs(t, r.Err, context.Canceled)
		synctest.Wait()
		assert.False(t, ran.Load(), "task ran with a done context")
		assert.NoError(t, e.Quiescent())
		fullBatch(t, e, "g")
	})
}
