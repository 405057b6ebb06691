package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// a running task Cancel()led that then returns success is
// counted once, as CANCELLED (the status its handle reports), in the
// executor's, its group's and its parent's counters; Await racing it too.
func TestACancelledRunningTaskIsCountedAsItsHandleSays(t *testing.T) {
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := groupconc.New(mustBuild(t, builder().Isolation(mode).ParentSeparator("/")))
				k := newGatedTask(t, 1)
				h := submitGated(t, e, "p/c", "x", k, groupconc.SubmitOptions{})
				k2 := newGatedTask(t, 2)
				h2 := submitGated(t, e, "p/c", "y", k2, groupconc.SubmitOptions{})
				synctest.Wait()
				require.True(t, h.Cancel())
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				r2, err := h2.Await(ctx) // ends at once: the task goes on
				assert.Error(t, err)
				assert.Equal(t, groupconc.StatusCancelled, r2.Status)
				k.Release()
				k2.Release()
				synctest.Wait()
				assert.Equal(t, groupconc.StatusCancelled, h.Wait().Status)
				assert.Equal(t, groupconc.StatusSuccess, h2.Wait().Status)
				s := e.Stats()
				assert.EqualValues(t, 1, s.Cancelled, "%+v", s)
				assert.EqualValues(t, 1, s.Succeeded, "%+v", s)
				for _, key := range []string{"p/c", "p"} {
					gs, ok := e.GroupStats(key)
					require.True(t, ok)
					assert.EqualValues(t, 1, gs.Cancelled, "%s %+v", key, gs)
					assert.EqualValues(t, 1, gs.Succeeded, "%s %+v", key, gs)
				}
				require.NoError(t, e.Quiescent())
				require.NoError(t, e.Shutdown(context.Background()))
			})
		})
	}
}
