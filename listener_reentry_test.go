package groupconc_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// callingBack returns a listener that calls UpdatePolicy and
// SetGroupOverride (on group "b") from every event, and counts the
// OnCompleted of group "a". It reads the executor from *e.
func callingBack(t *testing.T, e **groupconc.GroupExecutor, completed *atomic.Int64) groupconc.TaskLifecycleListener {
	back := func() {
		x := *e
		assert.NoError(t, x.UpdatePolicy(x.Policy()))
		one := 1
		assert.NoError(t, x.SetGroupOverride("b", groupconc.GroupOverride{MaxConcurrency: &one}))
	}
	return groupconc.ListenerFuncs{
		Submitted: func(string, string) { back() },
		Started:   func(string, string) { back() },
		Rejected:  func(string, string, string) { back() },
		Completed: func(key, _ string, _ groupconc.GroupResult[any]) {
			back()
			if key == "a" {
				completed.Add(1)
			}
		},
	}
}

// A listener may call back into the executor from any event. That holds
// for a task a resume ends: one whose context was cancelled while it was
// paused, found still parked by the resume's walk. With the listener told
// under the executor's update lock, its UpdatePolicy would never return.
// (A deadlock on a mutex is not one synctest sees: the test would hang.)
func TestListenerMayCallBackWhenAResumeEndsCancelledTasks(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			var e *groupconc.GroupExecutor
			var completed atomic.Int64
			e = newExecutor(t, modeBuilder(mode).PerGroupMaxConcurrency(map[string]int{"a": 1}).
				TaskLifecycleListener(callingBack(t, &e, &completed)))
			quiesce(t, e, submit(t, t.Context(), e, "b", "b", succeed)) // "b" exists
			k := newGatedTask(t, 0)
			run := submitGated(t, e, "a", "run", k, groupconc.SubmitOptions{})
			synctest.Wait()
			pause(t, e, "a", true)
			ctx, cancel := context.WithCancel(t.Context())
			var hs []*groupconc.TaskHandle[int]
			for i := range 50 {
				hs = append(hs, submit(t, ctx, e, "a", "w"+strconv.Itoa(i), succeed))
			}
			// Each task's watcher starts ending it, on a goroutine of its
			// own. The resume below finds most of them still parked.
			cancel()
			pause(t, e, "a", false)
			for _, h := range hs {
				assert.Equal(t, groupconc.StatusCancelled, h.Wait().Status)
			}
			k.Release()
			quiesce(t, e, append(hs, run)...)
			assert.Equal(t, int64(len(hs)+1), completed.Load())
		})
	})
}
