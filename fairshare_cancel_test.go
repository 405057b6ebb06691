package groupconc_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Fair-share isolation continued: tasks waiting at the global (fair) layer
// ended by each cancel route.

func TestFairShareEndsTasksWaitingForAGlobalPermitCancelledWithoutLeaks(t *testing.T) {
	routes := []struct {
		name   string
		cancel func(e *groupconc.GroupExecutor, h0 *groupconc.TaskHandle[int], stop context.CancelFunc)
		cause  error // the cause the result's Err must match; nil: not checked
		closes bool
	}{
		{"Cancel", func(_ *groupconc.GroupExecutor, h0 *groupconc.TaskHandle[int], _ context.CancelFunc) { h0.Cancel() }, nil, false},
		{"caller's context", func(_ *groupconc.GroupExecutor, _ *groupconc.TaskHandle[int], stop context.CancelFunc) { stop() }, nil, false},
		{"ShutdownGroup", func(e *groupconc.GroupExecutor, _ *groupconc.TaskHandle[int], _ context.CancelFunc) {
			e.ShutdownGroup("a")
		}, groupconc.ErrGroupShutdown, false},
		{"EvictGroup", func(e *groupconc.GroupExecutor, _ *groupconc.TaskHandle[int], _ context.CancelFunc) {
			e.EvictGroup("a")
		}, groupconc.ErrGroupEvicted, false},
		{"Close", func(e *groupconc.GroupExecutor, _ *groupconc.TaskHandle[int], _ context.CancelFunc) { _ = e.Close() }, groupconc.ErrClosed, true},
	}
	for _, route := range routes {
		t.Run(route.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := newRecorder()
				e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
					GlobalMaxInFlight(1).DefaultMaxConcurrencyPerGroup(2).TaskLifecycleListener(rec))
				holder := newGatedTask(t, 0)
				hx := submit(t, t.Context(), e, "x", "x0", holder.Fn)
				ctx, stop := context.WithCancel(t.Context())
				defer stop()
				var ran [2]bool
				hs := make([]*groupconc.TaskHandle[int], 2)
				for i := range hs {
					hs[i] = submit(t, ctx, e, "a", fmt.Sprint("a", i), func(context.Context) (int, error) { ran[i] = true; return i, nil })
				}
				synctest.Wait()
				require.Equal(t, 2, groupStats(t, e, "a").Waiting)

				route.cancel(e, hs[0], stop)
				synctest.Wait()
				ends := hs
				if route.name == "Cancel" {
					ends = hs[:1]
				}
				for i, h := range ends {
					r := doneResult(t, h)
					assert.Equal(t, groupconc.StatusCancelled, r.Status, "a%d: %v", i, r.Err)
					if route.cause != nil {
						assert.ErrorIs(t, r.Err, route.cause, "a%d: Err names the cause", i)
					}
					assert.Equal(t, []string{evSubmitted, evCompleted}, rec.Events("a", h.TaskID()), "a%d events", i)
				}
				holder.Release()
				hx.Wait()
				hs[1].Wait()
				synctest.Wait()
				assert.False(t, ran[0], "a0 ran after it was cancelled")
				require.NoError(t, e.Quiescent())
				if route.closes {
					return
				}
				// a's two concurrency permits and the global one are whole.
				var gauge gauge
				gate := make(chan struct{})
				more := []*groupconc.TaskHandle[int]{
					submit(t, t.Context(), e, "a", "later0", gated(gate, 0, &gauge)),
					submit(t, t.Context(), e, "b", "later1", gated(gate, 1, &gauge)),
				}
				synctest.Wait()
				assert.EqualValues(t, 1, gauge.cur.Load(), "later tasks running under the global cap 1")
				openGate(t, gate, more, "later")
				synctest.Wait()
				assert.NoError(t, e.Quiescent())
			})
		})
	}
}
