package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// ShutdownGroup and EvictGroup of a parent end a caller blocked on its
// full queue with their cause, though the tasks they cancel end at once
// and free the very slot the caller waits for. The caller never gets a
// handle to a task cancelled as it is accepted. It may see the freed slot
// before the cancel, on more than one CPU, so the test runs many rounds.
func TestStoppingAParentEndsACallerBlockedOnItsQueueThoughItFreesTheSlot(t *testing.T) {
	for _, c := range []struct {
		name string
		stop func(*groupconc.GroupExecutor, string)
		want error
	}{
		{"ShutdownGroup", (*groupconc.GroupExecutor).ShutdownGroup, groupconc.ErrGroupShutdown},
		{"EvictGroup", (*groupconc.GroupExecutor).EvictGroup, groupconc.ErrGroupEvicted},
	} {
		t.Run(c.name, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
				for range 100 {
					synctest.Test(t, func(t *testing.T) {
						e := newExecutor(t, builder().Isolation(mode).ParentSeparator("/").
							PerGroupMaxConcurrency(map[string]int{"p": 1}).PerGroupQueueThreshold(map[string]int{"p": 1}))
						running := submit(t, context.Background(), e, "p/a", "running", blockCtx(nil))
						waiting := submit(t, context.Background(), e, "p/b", "waiting", succeed)
						errs := make(chan error, 1)
						go func() {
							_, err := groupconc.SubmitWith(context.Background(), e, "p/c", "blocked", succeed, groupconc.SubmitOptions{Block: true})
							errs <- err
						}()
						synctest.Wait()
						require.Equal(t, 1, e.Stats().Blocked)
						c.stop(e, "p")
						assert.ErrorIs(t, <-errs, c.want)
						quiesce(t, e, running, waiting)
					})
				}
			})
		})
	}
}
