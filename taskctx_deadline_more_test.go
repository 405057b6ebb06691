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
