package groupconc_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Stopping a parent ends every task waiting in its subtree CANCELLED,
// though the running task it cancels ends at once and gives back the
// parent's permit those tasks wait for. A sweep from child to child let
// that permit start the tasks of the children not reached yet. Real time
// and many children, so the running task ends while the sweep goes on.
func TestStoppingAParentStartsNoneOfItsWaitingTasks(t *testing.T) {
	for _, c := range []struct {
		name string
		stop func(*groupconc.GroupExecutor, string)
	}{
		{"ShutdownGroup", (*groupconc.GroupExecutor).ShutdownGroup},
		{"EvictGroup", (*groupconc.GroupExecutor).EvictGroup},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
				e := newExecutor(t, builder().Isolation(mode).ParentSeparator("/").
					PerGroupMaxConcurrency(map[string]int{"p": 1}))
				started := make(chan struct{})
				running := submit(t, context.Background(), e, "p/a", "running", func(ctx context.Context) (int, error) {
					close(started)
					<-ctx.Done()
					return 0, ctx.Err()
				})
				<-started
				hs := make([]*groupconc.TaskHandle[int], 500)
				for i := range hs {
					hs[i] = submit(t, context.Background(), e, fmt.Sprintf("p/c%03d", i), "waiting", succeed)
				}
				c.stop(e, "p")
				assert.Equal(t, groupconc.StatusCancelled, running.Wait().Status)
				ran := 0
				for _, h := range hs {
					if h.Wait().Status != groupconc.StatusCancelled {
						ran++
					}
				}
				assert.Zero(t, ran, "tasks waiting when their parent was stopped, then started")
				require.NoError(t, e.Quiescent())
			})
		})
	}
}
