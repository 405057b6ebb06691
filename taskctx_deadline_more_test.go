package groupconc_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// A task's context ended by Cancel or ShutdownGroup before the caller's
// deadline keeps the Err it first reported when that deadline passes, as
// a context's Err returns the same error on successive calls.
func TestATaskContextsErrStaysCanceledWhenTheCallersDeadlinePassesAfter(t *testing.T) {
	for _, how := range []string{"Cancel", "ShutdownGroup", "EvictGroup"} {
		for _, touched := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/touched=%v", how, touched), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := groupconc.New(nil)
					defer e.Close()
					caller, cancel := context.WithTimeout(t.Context(), time.Second)
					defer cancel()
					in, ended, out := make(chan struct{}), make(chan struct{}), make(chan struct{})
					var first, second error
					h, err := groupconc.Submit(caller, e, "g", "t", func(ctx context.Context) (int, error) {
						defer close(out)
						if touched {
							_ = ctx.Done()
						}
						close(in)
						for ctx.Err() == nil {
							<-ended
						}
						first = ctx.Err()
						<-caller.Done()
						second = ctx.Err()
						return 0, nil
					})
					if !assert.NoError(t, err) {
						return
					}
					<-in
					switch how {
					case "Cancel":
						h.Cancel()
					case "ShutdownGroup":
						e.ShutdownGroup("g")
					case "EvictGroup":
						e.EvictGroup("g")
					}
					close(ended)
					<-out // past the caller's deadline
					assert.ErrorIs(t, first, context.Canceled)
					assert.Equal(t, first, second, "the task context's Err once done")
				})
			})
		}
	}
}

// Once the task's context has met the caller's deadline, its Err stays
// context.DeadlineExceeded when the caller is cancelled after, as a
// context's Err returns the same error on successive calls.
func TestATaskContextsErrStaysDeadlineExceededWhenTheCallerIsCancelledAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		parent, cancel := context.WithCancel(t.Context())
		defer cancel()
		caller := deadlineOnly{parent, time.Now().Add(time.Second)}
		expired, cancelled := make(chan struct{}), make(chan struct{})
		var first, second error
		h, err := groupconc.Submit(caller, e, "g", "t", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			first = ctx.Err()
			close(expired)
			<-cancelled
			second = ctx.Err()
			return 0, first
		})
		if !assert.NoError(t, err) {
			return
		}
		<-expired
		cancel()
		synctest.Wait()
		close(cancelled)
		r := h.Wait()
		assert.ErrorIs(t, first, context.DeadlineExceeded)
		assert.Equal(t, first, second, "the task context's Err once done")
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
	})
}

// ExecuteAll cancels its tasks when its context ends. At the context's
// deadline a context derived from a task's still ends with
// context.DeadlineExceeded, whether it was derived before the deadline or
// after ExecuteAll returned. The end races the task context's own
// deadline in the bubble, so it is run many times.
func TestAContextDerivedFromAnExecuteAllTaskEndsWithTheCallersDeadline(t *testing.T) {
	for _, before := range []bool{true, false} {
		t.Run(fmt.Sprintf("derived before the deadline=%v", before), func(t *testing.T) {
			for range 3000 {
				synctest.Test(t, func(t *testing.T) {
					e := groupconc.New(nil)
					defer e.Close()
					caller, cancel := context.WithTimeout(t.Context(), time.Second)
					defer cancel()
					returned, out := make(chan struct{}), make(chan struct{})
					var derived, task error
					rs, _ := groupconc.ExecuteAll(caller, e, []groupconc.GroupTask[int]{{GroupKey: "g", TaskID: "t", Task: func(ctx context.Context) (int, error) {
						defer close(out)
						if before {
							d, stop := context.WithCancel(ctx)
							defer stop()
							<-d.Done()
							derived, task = d.Err(), ctx.Err()
							return 0, derived
						}
						<-caller.Done()
						<-returned
						d, stop := context.WithCancel(ctx)
						defer stop()
						derived, task = d.Err(), ctx.Err()
						return 0, derived
					}}})
					close(returned)
					<-out
					assert.Equal(t, groupconc.StatusCancelled, rs[0].Status)
					assert.ErrorIs(t, derived, context.DeadlineExceeded, "a context derived from the task's")
					assert.ErrorIs(t, task, context.DeadlineExceeded, "the task's context")
				})
				if t.Failed() {
					return
				}
			}
		})
	}
}
