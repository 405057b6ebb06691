package groupconc_test

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// What a caller or a task leaves behind once it is over: nothing that
// keeps its group, its handle or a watch alive.

// A caller blocked on a full queue that gives up counts out of its group,
// which is then forgotten once idle, as if the caller had never come.
func TestABlockedCallerThatGivesUpLeavesItsGroupToGoIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().IdleGroupTTL(idleTTL).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0))
		k := newGatedTask(t, 0)
		ahead := submitGated(t, e, "a", "ahead", k, groupconc.SubmitOptions{})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := groupconc.SubmitWith(ctx, e, "a", "blocked", succeed, groupconc.SubmitOptions{Block: true})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		k.Release()
		quiesce(t, e, ahead)

		time.Sleep(2 * idleTTL) // fake clock
		_, ok := e.GroupStats("a")
		assert.False(t, ok, "group a, idle for 2×TTL after its blocked caller gave up")
	})
}

// Under fair share a caller blocked on a queue of no slots is watched for
// a global permit (see SubmitOptions.Block). The watch ends with the wait,
// however it ends: Quiescent counts the callers still watched.
func TestABlockedCallersWatchEndsWithItsWait(t *testing.T) {
	for _, end := range []string{"admitted", "ctx"} {
		t.Run(end, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, builder().Isolation(groupconc.IsolationFairShare).GlobalMaxInFlight(1).
					PerGroupQueueThreshold(map[string]int{"solo": 0}))
				r := newGatedTask(t, 0)
				hr := submitGated(t, e, "r", "r", r, groupconc.SubmitOptions{}) // holds the global permit
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				if end == "admitted" {
					go func() {
						time.Sleep(time.Second / 2)
						r.Release()
					}()
				}
				h, err := groupconc.SubmitWith(ctx, e, "solo", "blocked", succeed, groupconc.SubmitOptions{Block: true})
				r.Release()
				hs := []*groupconc.TaskHandle[int]{hr}
				if end == "admitted" {
					require.NoError(t, err)
					hs = append(hs, h)
				} else {
					require.ErrorIs(t, err, context.DeadlineExceeded)
				}
				quiesce(t, e, hs...)
			})
		})
	}
}

// A task that waited, and so was hooked to its caller's context, is let
// go by that context once it is over. A caller's context that lives on,
// a server's say, keeps no handle of its tasks.
func TestACallersContextKeepsNoTaskOnceOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(1))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		k := newGatedTask(t, 0)
		ahead := submitGated(t, e, "a", "ahead", k, groupconc.SubmitOptions{})
		h := submit(t, ctx, e, "a", "waits", succeed)
		gone := weak.Make(h)
		synctest.Wait()
		k.Release()
		quiesce(t, e, ahead, h)
		h = nil
		runtime.GC()
		runtime.GC()
		assert.Nil(t, gone.Value(), "the handle of a task over, still kept")
	})
}
