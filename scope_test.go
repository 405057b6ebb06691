package groupconc_test

// Group scopes: a task's context may be built while its group's scope, or
// the executor, is being cancelled.

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/require"
)

// A task that builds its context (its first Done) as ShutdownGroup,
// EvictGroup or Close cancels it ends up with its context done, with the
// cause of that call, once both have returned. Repeated: the two race.
func TestContextBuiltWhileItsScopeIsCancelledIsDone(t *testing.T) {
	for _, c := range []struct {
		name   string
		cancel func(e *groupconc.GroupExecutor)
		cause  error
	}{
		{"ShutdownGroup", func(e *groupconc.GroupExecutor) { e.ShutdownGroup("g") }, groupconc.ErrGroupShutdown},
		{"EvictGroup", func(e *groupconc.GroupExecutor) { e.EvictGroup("g") }, groupconc.ErrGroupEvicted},
		{"Close", func(e *groupconc.GroupExecutor) { _ = e.Close() }, groupconc.ErrClosed},
	} {
		t.Run(c.name, func(t *testing.T) {
			one := runtime.GOMAXPROCS(0) == 1
			for i := range 1000 {
				e := groupconc.New(nil)
				var start atomic.Bool
				running, checked := make(chan struct{}), make(chan struct{})
				built := make(chan context.Context, 1)
				h := submit(t, t.Context(), e, "g", "t", func(ctx context.Context) (int, error) {
					close(running)
					for !start.Load() { // running already: no wake-up to wait for
						if one {
							runtime.Gosched()
						}
					}
					ctx.Done()
					built <- ctx
					<-checked // the context is closed as the task ends
					return 0, nil
				})
				<-running
				start.Store(true)
				spin(i % 100 * 20) // the two start a little apart, by a different delay each time
				c.cancel(e)
				ctx := <-built
				select {
				case <-ctx.Done():
				default:
					t.Fatalf("the task's context is not done after %s and its building", c.name)
				}
				require.Equal(t, c.cause, context.Cause(ctx))
				close(checked)
				h.Wait()
				require.NoError(t, e.Shutdown(t.Context()))
			}
		})
	}
}

// A task that builds its context after its group was shut down derives it
// from the fresh scope: it is not cancelled, and the next shutdown cancels
// it.
func TestContextBuiltAfterShutdownGroupDerivesFromTheFreshScope(t *testing.T) {
	e := groupconc.New(nil)
	defer e.Close()
	submit(t, t.Context(), e, "g", "first", succeed).Wait()
	e.ShutdownGroup("g")
	built := make(chan context.Context, 1)
	h := submit(t, t.Context(), e, "g", "second", func(ctx context.Context) (int, error) {
		ctx.Done()
		built <- ctx
		<-ctx.Done()
		return 0, context.Cause(ctx)
	})
	require.NoError(t, (<-built).Err())
	e.ShutdownGroup("g")
	require.ErrorIs(t, h.Wait().Err, groupconc.ErrGroupShutdown)
}

var spun atomic.Int64

// spin busies the goroutine for n steps of a few nanoseconds.
func spin(n int) {
	for range n {
		spun.Add(1)
	}
}
