package groupconc_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// turnedAway returns an executor whose group "g" has one permit and no
// queue, with handler, and holds the permit with a gated task. It runs in
// the caller's synctest bubble. A minute of fake time passes first, so
// that a task's times, kept as offsets from its submission, are read from
// an offset that is not zero.
func turnedAway(t *testing.T, handler groupconc.RejectionHandler) *groupconc.GroupExecutor {
	e := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).RejectionHandler(handler))
	time.Sleep(time.Minute)
	k := newGatedTask(t, 0)
	submit(t, t.Context(), e, "g", "ahead", k.Fn)
	synctest.Wait()
	return e
}

// A task a handler answers for starts when Rejection.Run ran it, and ends
// when the handler returned. One the handler never ran starts as it ends.
// The handler takes a second before Run, fn two, and the handler one more
// after.
func TestAHandledTaskStartsWhenRunRanIt(t *testing.T) {
	for _, run := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			e := turnedAway(t, func(ctx context.Context, r *groupconc.Rejection) (any, error) {
				time.Sleep(time.Second)
				if run {
					if _, err := r.Run(ctx); err != nil {
						return nil, err
					}
				}
				time.Sleep(time.Second)
				return 7, nil
			})
			h := submit(t, t.Context(), e, "g", "handled", func(context.Context) (int, error) {
				time.Sleep(2 * time.Second)
				return 1, nil
			})
			r := h.Wait()
			require.Equal(t, groupconc.StatusSuccess, r.Status)
			assert.Equal(t, 7, r.Value)
			if run {
				assert.Equal(t, time.Second, r.QueueWait(), "Start is when Run ran fn")
				assert.Equal(t, 4*time.Second, r.End.Sub(r.Submitted))
			} else {
				assert.Equal(t, r.End, r.Start, "never ran: Start is End")
				assert.Equal(t, 2*time.Second, r.End.Sub(r.Submitted))
			}
		})
	}
}

// A handler that ran a Do's fn through Rejection.Run, which returned, and
// then panicked itself, fails the task: Do returns its *PanicError. Only a
// panic of fn goes on up from Do.
func TestADoHandlersOwnPanicAfterRunIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := turnedAway(t, func(ctx context.Context, r *groupconc.Rejection) (any, error) {
			if _, err := r.Run(ctx); err != nil {
				return nil, err
			}
			panic("handler")
		})
		ran := false
		_, err := groupconc.Do(t.Context(), e, "g", func(context.Context) (int, error) {
			ran = true
			return 1, nil
		}, groupconc.SubmitOptions{})
		require.True(t, ran, "Run ran fn")
		var pe *groupconc.PanicError
		require.True(t, errors.As(err, &pe), "Do returned %v, want a *PanicError", err)
		assert.Equal(t, "handler", pe.Value)
	})
}
