package groupconc_test

// A group's outcome counters count each task once, by the status its handle
// reports, as ExecutorStats does: also when Cancel races the function's
// return, when Close or an expired Shutdown ends tasks, when a task calls
// runtime.Goexit, when a rejection handler panics, and for the victims of
// RejectDiscardOldest. A parent's counters cover its subtree.

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// outcomeTally counts the handles' final statuses per group, and for each
// ancestor of the group too ("t" of "t/a").
type outcomeTally struct {
	groups map[string]*[4]uint64
	total  [4]uint64
}

func tallyOutcomes(t *testing.T, hs []*groupconc.TaskHandle[int]) outcomeTally {
	t.Helper()
	o := outcomeTally{groups: map[string]*[4]uint64{}}
	for _, h := range hs {
		st := h.Wait().Status
		require.True(t, st >= groupconc.StatusSuccess && st <= groupconc.StatusRejected, "status %v", st)
		o.total[st-1]++
		keys := []string{h.GroupKey()}
		if strings.HasPrefix(h.GroupKey(), "t/") {
			keys = append(keys, "t")
		}
		for _, k := range keys {
			if o.groups[k] == nil {
				o.groups[k] = new([4]uint64)
			}
			o.groups[k][st-1]++
		}
	}
	return o
}

// requireCountsMatch checks every group's counters, and the executor's,
// against the handles hs.
func requireCountsMatch(t *testing.T, e *groupconc.GroupExecutor, hs []*groupconc.TaskHandle[int]) {
	t.Helper()
	o := tallyOutcomes(t, hs)
	synctest.Wait()
	var top [4]uint64
	for gs := range e.AllGroupStats() {
		got := [4]uint64{gs.Succeeded, gs.Failed, gs.Cancelled, gs.Rejected}
		want := o.groups[gs.GroupKey]
		if want == nil {
			want = new([4]uint64)
		}
		assert.Equal(t, *want, got, "group %q: succeeded, failed, cancelled, rejected", gs.GroupKey)
		if gs.Parent == "" {
			for i := range got {
				top[i] += got[i]
			}
		}
	}
	st := e.Stats()
	exec := [4]uint64{st.Succeeded, st.Failed, st.Cancelled, st.Rejected}
	assert.Equal(t, o.total, exec, "the executor's counters against the handles")
	assert.Equal(t, exec, top, "the top-level groups' counters add up to the executor's")
	assert.Equal(t, uint64(len(hs)), st.Submitted)
}

func TestGroupOutcomeCountersFollowTheHandlesThroughEveryEnding(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, end := range []string{"Close", "Shutdown with an expired ctx"} {
			t.Run(end, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(2).
						DefaultQueueThresholdPerGroup(2).RejectionPolicy(groupconc.RejectDiscardOldest))
					sub := func(key, id string, fn groupconc.Task[int]) *groupconc.TaskHandle[int] {
						return submit(t, t.Context(), e, key, id, fn)
					}
					racer, stays := newGatedTask(t, 1), newGatedTask(t, 1)
					hs := []*groupconc.TaskHandle[int]{
						sub("t/a", "racer", racer.Fn), // its handle is cancelled before it returns
						sub("t/a", "stays", stays.Fn), // runs through Close or Shutdown to SUCCESS
						sub("t", "goexit", func(context.Context) (int, error) { runtime.Goexit(); return 0, nil }),
						sub("t", "panic", func(context.Context) (int, error) { panic("boom") }),
						sub("u", "fails", func(context.Context) (int, error) { return 0, errBoom }),
					}
					synctest.Wait()
					// t/a is full: two wait in its queue, and a third displaces the oldest.
					for _, id := range []string{"victim", "waits", "displacer"} {
						hs = append(hs, sub("t/a", id, succeed))
						synctest.Wait()
					}
					require.True(t, hs[0].Cancel())
					racer.Release() // returns SUCCESS after its handle said CANCELLED
					synctest.Wait()
					if end == "Close" {
						require.NoError(t, e.Close())
					} else {
						ctx, cancel := context.WithCancel(t.Context())
						cancel()
						require.ErrorIs(t, e.Shutdown(ctx), context.Canceled)
					}
					stays.Release()
					requireCountsMatch(t, e, hs)
					assert.Equal(t, groupconc.StatusCancelled, hs[0].Wait().Status, "racer")
					assert.Equal(t, groupconc.StatusSuccess, hs[1].Wait().Status, "stays")
					assert.Equal(t, groupconc.StatusRejected, hs[5].Wait().Status, "victim")
				})
			})
		}
	})
}

func TestGroupOutcomeCountersCountATaskWhoseRejectionHandlerPanicsAsFailed(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			panicky := func(context.Context, *groupconc.Rejection) (any, error) { panic("handler") }
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultQueueThresholdPerGroup(0).RejectionHandler(panicky))
			k := newGatedTask(t, 1)
			hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "t/a", "run", k.Fn)}
			synctest.Wait()
			hs = append(hs, submit(t, t.Context(), e, "t/a", "turned away", succeed))
			synctest.Wait()
			k.Release()
			requireCountsMatch(t, e, hs)
			assert.Equal(t, groupconc.StatusFailed, hs[1].Wait().Status)
		})
	})
}

func TestGroupOutcomeCountersAgreeWithHandlesWhenCancelRacesTheReturn(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(4))
			var hs []*groupconc.TaskHandle[int]
			for i := range 200 {
				key := []string{"t", "t/a", "t/b", "u"}[i%4]
				h := submit(t, t.Context(), e, key, "x", func(context.Context) (int, error) {
					runtime.Gosched()
					return 1, nil
				})
				hs = append(hs, h)
				go h.Cancel() // races the function's return
			}
			requireCountsMatch(t, e, hs)
		})
	})
}
