package groupconc_test

import (
	"context"
	"errors"
	"runtime/debug"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// panicsHere panics in a frame of its own, which a stack names.
//
//go:noinline
func panicsHere(context.Context) (int, error) { panic("boom") }

const panicFrame = "groupconc_test.panicsHere"

// stackAtRecover calls f and returns the stack its caller's deferred
// recover sees, and the value it recovers.
func stackAtRecover(f func()) (stack string, v any) {
	defer func() {
		if v = recover(); v != nil {
			stack = string(debug.Stack())
		}
	}()
	f()
	return "", nil
}

// A panic of fn goes on up to Do's caller as if the caller had called fn:
// a recover there sees fn's frame on the stack, as net/http's log of a
// panicking handler shows it. The listener's PanicError shows it too, and
// the task ends FAILED with its permits back. It holds however fn runs:
// with its permits, without (RejectCallerRuns), inside a task, and through
// Rejection.Run.
func TestADoPanicGoesOnUpWithFnsFrameOnTheStack(t *testing.T) {
	direct, _ := stackAtRecover(func() { _, _ = panicsHere(context.Background()) })
	require.Contains(t, direct, panicFrame, "the frame of a direct call")

	run := func(ctx context.Context, r *groupconc.Rejection) (any, error) { return r.Run(ctx) }
	for _, c := range []struct {
		name string
		b    *groupconc.PolicyBuilder
		full bool // the group's one permit is held: the Do is turned away
		in   bool // the Do is made inside a task
	}{
		{name: "permits", b: builder()},
		{name: "caller-runs", b: builder().DefaultQueueThresholdPerGroup(0).RejectionPolicy(groupconc.RejectCallerRuns), full: true},
		{name: "inside-a-task", b: builder(), in: true},
		{name: "rejection-run", b: builder().DefaultQueueThresholdPerGroup(0).RejectionHandler(run), full: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := newRecorder()
				e := newExecutor(t, c.b.TaskLifecycleListener(rec))
				var hs []*groupconc.TaskHandle[int]
				var k *gatedTask
				if c.full {
					k = newGatedTask(t, 0)
					hs = append(hs, submit(t, t.Context(), e, "a", "ahead", k.Fn))
					synctest.Wait()
				}
				var stack string
				var v any
				do := func(ctx context.Context) {
					stack, v = stackAtRecover(func() {
						_, _ = groupconc.Do(ctx, e, "a", panicsHere, groupconc.SubmitOptions{})
						t.Error("Do returned after fn panicked")
					})
				}
				if c.in {
					hs = append(hs, submit(t, t.Context(), e, "b", "outer", func(ctx context.Context) (int, error) {
						do(ctx)
						return 0, nil
					}))
					hs[len(hs)-1].Wait()
				} else {
					do(t.Context())
				}
				assert.Equal(t, "boom", v)
				assert.Contains(t, stack, panicFrame, "the stack at the caller's recover")

				var pe *groupconc.PanicError
				var seen int
				for _, r := range rec.results {
					if errors.As(r.Err, &pe) && pe.Value == "boom" {
						seen++
						assert.Contains(t, string(pe.Stack), panicFrame, "the listener's PanicError")
						assert.Equal(t, groupconc.StatusFailed, r.Status)
					}
				}
				assert.Equal(t, 1, seen, "OnCompleted with the panic")
				if k != nil {
					k.Release()
				}
				quiesce(t, e, hs...)
				assert.Equal(t, uint64(1), e.Stats().Failed)
			})
		})
	}
}
