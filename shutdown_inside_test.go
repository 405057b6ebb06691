package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// TestShutdownInAListenerWaitsForItsOwnTaskUntilCtxEnds: as its doc says,
// a Shutdown that waits in a listener method waits for the task it is
// told about, so until its ctx ends; one started on its own goroutine
// returns nil once the task is done.
func TestShutdownInAListenerWaitsForItsOwnTaskUntilCtxEnds(t *testing.T) {
	for _, own := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			var e *groupconc.GroupExecutor
			got := make(chan error, 1)
			p := mustBuild(t, groupconc.NewPolicyBuilder().TaskLifecycleListener(groupconc.ListenerFuncs{
				Completed: func(string, string, groupconc.GroupResult[any]) {
					if own {
						go func() { got <- e.Shutdown(context.Background()) }()
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					got <- e.Shutdown(ctx)
				},
			}))
			e = groupconc.New(p)
			start := time.Now()
			h, err := groupconc.Submit(t.Context(), e, "g", "t", func(context.Context) (int, error) { return 1, nil })
			require.NoError(t, err)
			err = <-got
			if own {
				assert.NoError(t, err)
				assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status)
				return
			}
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, time.Minute, time.Since(start), "it waited for its ctx")
			h.Wait()
		})
	}
}
