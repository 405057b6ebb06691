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

// ExecuteAllWith with Block waits, task by task, for a slot of a parent's
// full queue. If the slots come, every task runs; if its context ends
// first, the tasks not yet submitted are reported cancelled with its error.
// Either way the results are in input order.
func TestExecuteAllWithBlockWaitsForAParentsQueue(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, freed := range []bool{false, true} {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(2).
					PerGroupMaxConcurrency(map[string]int{"t": 1}).PerGroupQueueThreshold(map[string]int{"t": 1}))
				run, queued := newGatedTask(t, 1), newGatedTask(t, 2)
				h1 := submitGated(t, e, "t/a", "run", run, groupconc.SubmitOptions{})
				synctest.Wait()
				h2 := submitGated(t, e, "t/b", "queued", queued, groupconc.SubmitOptions{Cost: 2}) // t's one slot
				synctest.Wait()
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				if freed {
					go func() {
						time.Sleep(time.Second / 2) // the bubble's clock
						run.Release()
						queued.Release()
					}()
				}
				tasks := []groupconc.GroupTask[int]{
					{GroupKey: "t/c", TaskID: "x", Task: succeed},
					{GroupKey: "s", TaskID: "y", Task: succeed},
					{GroupKey: "t/d", TaskID: "z", Task: succeed},
				}
				rs, err := groupconc.ExecuteAllWith(ctx, e, tasks, groupconc.SubmitOptions{Block: true})
				require.Len(t, rs, 3)
				for i, id := range []string{"x", "y", "z"} {
					assert.Equal(t, id, rs[i].TaskID)
				}
				if freed {
					require.NoError(t, err)
					for _, r := range rs {
						assert.Equal(t, groupconc.StatusSuccess, r.Status, "%+v", r)
					}
					assert.Equal(t, uint64(5), e.Stats().Submitted)
				} else {
					require.ErrorIs(t, err, context.DeadlineExceeded)
					for _, r := range rs {
						assert.Equal(t, groupconc.StatusCancelled, r.Status, "%+v", r)
						assert.True(t, errors.Is(r.Err, context.DeadlineExceeded), "Err %v", r.Err)
					}
					assert.Equal(t, uint64(2), e.Stats().Submitted, "x waited for t's slot; y and z were never submitted")
					run.Release()
					queued.Release()
				}
				quiesce(t, e, h1, h2)
			})
		}
	})
}
