package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// TestExecuteAllWithCostsUnderAPausedParentEndsWithShutdownsDeadline: a
// paused parent's subtree waits through a graceful Shutdown, which cancels
// it at its deadline. Every result comes back and nothing stays counted.
func TestExecuteAllWithCostsUnderAPausedParentEndsWithShutdownsDeadline(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().Isolation(mode).ParentSeparator("/").
				GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(3).TaskLifecycleListener(rec)))
			for _, k := range []string{"t", "u"} { // the groups are known
				submit(t, t.Context(), e, k, "first", func(context.Context) (int, error) { return 0, nil }).Wait()
			}
			paused := true
			require.NoError(t, e.SetGroupOverride("t", groupconc.GroupOverride{Paused: &paused}))
			var tasks []groupconc.GroupTask[int]
			for i, k := range []string{"t", "t/a", "t/a/x", "t/b", "u"} {
				tasks = append(tasks, groupconc.GroupTask[int]{GroupKey: k, TaskID: fmt.Sprint("x", i), Task: func(context.Context) (int, error) { return 1, nil }})
			}
			done := make(chan []groupconc.GroupResult[int])
			go func() {
				res, err := groupconc.ExecuteAllWith(t.Context(), e, tasks, groupconc.SubmitOptions{Cost: 5})
				assert.NoError(t, err)
				done <- res
			}()
			synctest.Wait()
			gs, _ := e.GroupStats("t")
			assert.Equal(t, 4, gs.Waiting, "the paused subtree waits")
			assert.Zero(t, e.Stats().GlobalInFlight, "a paused subtree holds no global permit")
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Millisecond)
			defer cancel()
			assert.ErrorIs(t, e.Shutdown(ctx), context.DeadlineExceeded, "Shutdown does not resume a pause")
			res := <-done
			for i, r := range res {
				want := groupconc.StatusCancelled
				if tasks[i].GroupKey == "u" {
					want = groupconc.StatusSuccess
				}
				assert.Equal(t, want, r.Status, "%s", tasks[i].GroupKey)
				evs := []string{evSubmitted, evStarted, evCompleted}
				if want == groupconc.StatusCancelled {
					evs = []string{evSubmitted, evCompleted}
				}
				assert.Equal(t, evs, rec.Events(tasks[i].GroupKey, tasks[i].TaskID), "%s", tasks[i].GroupKey)
			}
			synctest.Wait()
			gs, _ = e.GroupStats("t")
			assert.Equal(t, uint64(4), gs.Cancelled, "the parent counts its subtree's outcomes")
			churnCheckZero(t, e)
		})
	})
}

// TestEvictingAParentEndsAChildsWaitingDo: the Do of a child group waits
// for the parent's limit; evicting the parent ends it, and the new groups
// start from nothing.
func TestEvictingAParentEndsAChildsWaitingDo(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().Isolation(mode).ParentSeparator("/").
				GlobalMaxInFlight(8).PerGroupMaxConcurrency(map[string]int{"t": 2}).DefaultMaxConcurrencyPerGroup(4)))
			gate := make(chan struct{})
			h := submit(t, t.Context(), e, "t/a", "hold", gated(gate, 1))
			var err error
			done := make(chan struct{})
			ran := false
			go func() {
				defer close(done)
				_, err = groupconc.Do(t.Context(), e, "t/b", func(context.Context) (int, error) { ran = true; return 1, nil }, groupconc.SubmitOptions{Cost: 2})
			}()
			synctest.Wait()
			gs, _ := e.GroupStats("t/b")
			require.Equal(t, 1, gs.Waiting, "the Do waits for its parent's limit")
			e.EvictGroup("t")
			<-done
			assert.False(t, ran)
			assert.True(t, errors.Is(err, groupconc.ErrGroupEvicted), "Do's error %v names the eviction", err)
			close(gate)
			assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, "its function returned a value")
			v, err := groupconc.Do(t.Context(), e, "t/b", func(context.Context) (int, error) { return 2, nil }, groupconc.SubmitOptions{Cost: 2})
			assert.NoError(t, err)
			assert.Equal(t, 2, v)
			synctest.Wait()
			churnCheckZero(t, e)
			require.NoError(t, e.Close())
		})
	})
}
