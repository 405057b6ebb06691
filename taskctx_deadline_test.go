package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// A context derived from a task's context before the caller's deadline
// ends with context.DeadlineExceeded when that deadline passes, as one
// derived from the caller's own would. gRPC, database/sql and most clients
// derive a context of their own and report its Err, so a Canceled there
// would turn a deadline the caller set into a cancel.
func TestAContextDerivedFromATaskEndsWithTheCallersDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, e *groupconc.GroupExecutor, fn groupconc.Task[int])
	}{
		{"Do", func(ctx context.Context, e *groupconc.GroupExecutor, fn groupconc.Task[int]) {
			_, _ = groupconc.Do(ctx, e, "g", fn, groupconc.SubmitOptions{})
		}},
		{"Submit", func(ctx context.Context, e *groupconc.GroupExecutor, fn groupconc.Task[int]) {
			h, err := groupconc.Submit(ctx, e, "g", "t", fn)
			if err == nil {
				h.Wait()
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := groupconc.New(nil)
				defer e.Close()
				caller, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				var derived, cancelled, task error
				var cause error
				tc.run(caller, e, func(ctx context.Context) (int, error) {
					d, stop := context.WithCancel(ctx)
					defer stop()
					c, stopC := context.WithCancel(ctx)
					defer stopC()
					<-d.Done()
					<-c.Done() // siblings are cancelled one after the other
					derived, cancelled, task, cause = d.Err(), c.Err(), ctx.Err(), context.Cause(ctx)
					return 0, nil
				})
				assert.ErrorIs(t, derived, context.DeadlineExceeded, "a context derived from the task's")
				assert.ErrorIs(t, cancelled, context.DeadlineExceeded, "another context derived from the task's")
				assert.ErrorIs(t, task, context.DeadlineExceeded, "the task's context")
				assert.ErrorIs(t, cause, context.DeadlineExceeded, "the task context's cause")
			})
		})
	}
}

// The caller's cancel, Close and ShutdownGroup still end a context derived
// from the task's with context.Canceled, before the caller's deadline.
func TestAContextDerivedFromATaskWithADeadlineIsStillCancelled(t *testing.T) {
	for _, how := range []string{"caller", "ShutdownGroup", "Close"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := groupconc.New(nil)
				defer e.Close()
				caller, cancel := context.WithTimeout(t.Context(), time.Hour)
				defer cancel()
				in := make(chan struct{})
				var derived, cause error
				go func() {
					defer close(in)
					_, _ = groupconc.Do(caller, e, "g", func(ctx context.Context) (int, error) {
						d, stop := context.WithCancel(ctx)
						defer stop()
						in <- struct{}{}
						<-d.Done()
						derived, cause = d.Err(), context.Cause(d)
						return 0, nil
					}, groupconc.SubmitOptions{})
				}()
				<-in
				switch how {
				case "caller":
					cancel()
				case "ShutdownGroup":
					e.ShutdownGroup("g")
				case "Close":
					e.Close()
				}
				<-in
				assert.ErrorIs(t, derived, context.Canceled)
				assert.Error(t, cause)
			})
		})
	}
}

// deadlineOnly is a caller's context that names a deadline but leaves its
// end to its cancel, so the task's context meets the deadline first.
type deadlineOnly struct {
	context.Context
	at time.Time
}

func (d deadlineOnly) Deadline() (time.Time, bool) { return d.at, true }

// The end of a context derived from a task's at the caller's deadline
// stays DeadlineExceeded, in its Err and its cause, when the caller is
// cancelled after it, as a deferred cancel does once the call returns.
func TestAContextDerivedFromATaskKeepsItsDeadlineWhenTheCallerIsCancelledAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		parent, cancel := context.WithCancel(t.Context())
		caller := deadlineOnly{parent, time.Now().Add(time.Second)}
		var derived context.Context
		_, _ = groupconc.Do(caller, e, "g", func(ctx context.Context) (int, error) {
			d, stop := context.WithCancel(ctx)
			defer stop()
			<-d.Done()
			derived = d
			return 0, nil
		}, groupconc.SubmitOptions{})
		cancel()
		synctest.Wait()
		assert.ErrorIs(t, derived.Err(), context.DeadlineExceeded)
		assert.ErrorIs(t, context.Cause(derived), context.DeadlineExceeded)
	})
}
