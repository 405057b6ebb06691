package groupconc_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// discardOldest builds an executor under RejectDiscardOldest whose group
// "a" runs one gated task and has room for two waiting ones.
func discardOldest(t *testing.T, mode groupconc.IsolationMode, rec *recorder) (*groupconc.GroupExecutor, *gatedTask, *groupconc.TaskHandle[int]) {
	t.Helper()
	e := newExecutor(t, modeBuilder(mode).RejectionPolicy(groupconc.RejectDiscardOldest).
		DefaultQueueThresholdPerGroup(2).TaskLifecycleListener(rec))
	k := newGatedTask(t, 0)
	h := submit(t, t.Context(), e, "a", "run", k.Fn)
	synctest.Wait()
	return e, k, h
}

func requireDisplaced(t *testing.T, h *groupconc.TaskHandle[int], rec *recorder) {
	t.Helper()
	r, err := h.Await(t.Context())
	require.Equal(t, groupconc.StatusRejected, r.Status, "task %s", h.TaskID())
	assert.NoError(t, err, "Await of a displaced task")
	var re *groupconc.RejectedError
	require.ErrorAs(t, r.Err, &re)
	assert.Equal(t, groupconc.ReasonDisplaced, re.Reason)
	assert.Equal(t, groupconc.ReasonDisplaced, rec.Reason("a", h.TaskID()))
}

// requireDoneDisplaced requires h done, rejected as displaced. why says
// why h was the one displaced.
func requireDoneDisplaced(t *testing.T, h *groupconc.TaskHandle[int], why string) {
	t.Helper()
	r := doneResult(t, h)
	require.Equal(t, groupconc.StatusRejected, r.Status, why)
	assert.Equal(t, groupconc.ReasonDisplaced, r.Err.(*groupconc.RejectedError).Reason, why)
}

func TestDiscardOldestDisplacesTheOldestOfTheLowestPriority(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e, k, run := discardOldest(t, mode, rec)
			var log startLog
			low1 := submitPrio(t, e, "a", "low1", groupconc.PriorityLow, log.task("low1"))
			low2 := submitPrio(t, e, "a", "low2", groupconc.PriorityLow, log.task("low2"))
			n := submitPrio(t, e, "a", "n", groupconc.PriorityNormal, log.task("n"))
			synctest.Wait()
			requireDisplaced(t, low1, rec)
			assert.False(t, low2.IsDone())
			gs, _ := e.GroupStats("a")
			assert.Equal(t, 2, gs.Waiting)
			k.Release()
			quiesce(t, e, run, low2, n)
			assert.Equal(t, []string{"n", "low2"}, log.order())
			assert.Equal(t, uint64(1), e.Stats().Rejected)
		})
	})
}

func TestDiscardOldestRejectsANewTaskWhenEveryWaitingOneIsHigher(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e, k, run := discardOldest(t, mode, rec)
			h1 := submitPrio(t, e, "a", "h1", groupconc.PriorityHigh, succeed)
			h2 := submitPrio(t, e, "a", "h2", groupconc.PriorityHigh, succeed)
			low := submitPrio(t, e, "a", "low", groupconc.PriorityLow, succeed)
			r, err := low.Await(t.Context())
			assert.Equal(t, groupconc.StatusRejected, r.Status)
			assert.NoError(t, err, "rejected as under RejectDiscard")
			assert.Equal(t, groupconc.ReasonGroupQueueFull, rec.Reason("a", "low"))
			// One of the same priority displaces the oldest of them.
			h3 := submitPrio(t, e, "a", "h3", groupconc.PriorityHigh, succeed)
			requireDisplaced(t, h1, rec)
			k.Release()
			quiesce(t, e, run, h2, h3)
		})
	})
}

func TestDiscardOldestDisplacesFromTheGlobalQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		e := newExecutor(t, builder().RejectionPolicy(groupconc.RejectDiscardOldest).
			GlobalMaxInFlight(1).GlobalQueueThreshold(1).TaskLifecycleListener(rec))
		k := newGatedTask(t, 0)
		run := submit(t, t.Context(), e, "x", "run", k.Fn)
		old := submitPrio(t, e, "a", "old", groupconc.PriorityNormal, succeed)
		n := submitPrio(t, e, "b", "new", groupconc.PriorityNormal, succeed)
		r, err := old.Await(t.Context())
		require.NoError(t, err)
		assert.Equal(t, groupconc.StatusRejected, r.Status)
		assert.Equal(t, groupconc.ReasonDisplaced, rec.Reason("a", "old"))
		k.Release()
		quiesce(t, e, run, n)
		assert.Equal(t, groupconc.StatusSuccess, n.Wait().Status)
	})
}

func TestARejectionHandlerReplacesDiscardOldest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var turned []string
		e := newExecutor(t, builder().RejectionPolicy(groupconc.RejectDiscardOldest).DefaultQueueThresholdPerGroup(1).
			RejectionHandler(func(_ context.Context, r *groupconc.Rejection) (any, error) {
				turned = append(turned, r.TaskID)
				return 5, nil
			}))
		k := newGatedTask(t, 0)
		run := submit(t, t.Context(), e, "a", "run", k.Fn)
		w := submit(t, t.Context(), e, "a", "w", succeed)
		n := submit(t, t.Context(), e, "a", "n", succeed)
		assert.Equal(t, 5, n.Wait().Value)
		assert.False(t, w.IsDone())
		k.Release()
		quiesce(t, e, run, w)
		assert.Equal(t, []string{"n"}, turned)
	})
}

func TestRejectDiscardOldestString(t *testing.T) {
	assert.Equal(t, "RejectDiscardOldest", groupconc.RejectDiscardOldest.String())
	_, err := groupconc.NewPolicyBuilder().RejectionPolicy(groupconc.RejectDiscardOldest).Build()
	require.NoError(t, err)
}

// A stampede of submitters at five priorities into full queues under
// RejectDiscardOldest, in real time: a task displaces another while that
// one is being served and moves on to its next layer (under IsolationOff
// it gives its global slot back there). Every task ends, as a success or
// rejected, and every count, permit and slot is back to zero.
func TestDiscardOldestStampedeKeepsEveryCount(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		b := modeBuilder(mode).RejectionPolicy(groupconc.RejectDiscardOldest).GlobalMaxInFlight(2).
			DefaultMaxInFlightPerGroup(1).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(2)
		if mode == groupconc.IsolationOff {
			b.GlobalQueueThreshold(3)
		}
		e := groupconc.New(mustBuild(t, b))
		start := make(chan struct{})
		var wg sync.WaitGroup
		hs := make([][]*groupconc.TaskHandle[int], 8)
		for s := range hs {
			wg.Go(func() {
				<-start
				for i := range 100 {
					opts := groupconc.SubmitOptions{Priority: groupconc.PriorityHighest + groupconc.Priority((s+i)%5)}
					h, err := groupconc.SubmitWith(context.Background(), e, fmt.Sprintf("g%d", i%3), fmt.Sprint(i), func(context.Context) (int, error) {
						runtime.Gosched()
						return 1, nil
					}, opts)
					if assert.NoError(t, err) {
						hs[s] = append(hs[s], h)
					}
				}
			})
		}
		close(start)
		wg.Wait()
		for _, hs := range hs {
			for _, h := range hs {
				st := h.Wait().Status
				assert.True(t, st == groupconc.StatusSuccess || st == groupconc.StatusRejected, "task ended %v", st)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, e.Shutdown(ctx))
		require.NoError(t, e.Quiescent())
	})
}

// A listener told of a displaced task may call runtime.Goexit, as t.FailNow
// does, on the goroutine that ends the task. The task still ends, FAILED
// as on any Goexit of the executor's goroutines, and its slot comes back
// for the task that displaced it.
func TestADisplacedTaskEndsThoughItsListenerCallsGoexit(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			exit := groupconc.ListenerFuncs{Rejected: func(_, _, reason string) {
				if reason == groupconc.ReasonDisplaced {
					runtime.Goexit()
				}
			}}
			e := newExecutor(t, modeBuilder(mode).RejectionPolicy(groupconc.RejectDiscardOldest).
				DefaultQueueThresholdPerGroup(1).TaskLifecycleListener(exit))
			k := newGatedTask(t, 0)
			run := submit(t, t.Context(), e, "a", "run", k.Fn)
			old := submit(t, t.Context(), e, "a", "old", succeed)
			n := submit(t, t.Context(), e, "a", "new", succeed)
			r := old.Wait()
			assert.Equal(t, groupconc.StatusFailed, r.Status)
			assert.ErrorContains(t, r.Err, "runtime.Goexit")
			k.Release()
			quiesce(t, e, run, old, n)
			assert.Equal(t, groupconc.StatusSuccess, n.Wait().Status)
		})
	})
}
