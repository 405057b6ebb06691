package groupconc_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A task submitted as its group (or its parent) resumes could join the
// pause line after the resume took the line's tasks out, and wait there
// for a resume that never comes. Each round pauses and resumes while
// tasks are submitted, resumes last while they still are, and then
// every task must complete.
func TestTaskSubmittedAsItsGroupResumesIsNeverLeftWaiting(t *testing.T) {
	eachPause(t, "t/g", 40, resumeRacingSubmits)
}

// resumeRacingSubmits is one round: tasks are submitted to t/g while the
// key paused is paused and resumed, resumed last.
func resumeRacingSubmits(t *testing.T, mode groupconc.IsolationMode, paused string) {
	e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(2))
	hs := submitWhileToggling(t, e, "t/g", paused, false)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, h := range hs {
		_, err := h.Await(ctx)
		require.NotErrorIs(t, err, context.DeadlineExceeded, "a task was left waiting: %+v", groupStats(t, e, "t/g"))
	}
}

// submitWhileToggling has 3 callers submit 200 tasks each to key while
// the key paused is paused and resumed, until a caller is done. It then
// sets the pause to last, while the others still submit, and returns the
// handles once they are done.
func submitWhileToggling(t *testing.T, e *groupconc.GroupExecutor, key, paused string, last bool) []*groupconc.TaskHandle[int] {
	t.Helper()
	// The groups must exist before an override can name them.
	submit(t, t.Context(), e, key, "first", succeed).Wait()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		hs   []*groupconc.TaskHandle[int]
		done = make(chan struct{}, 3)
	)
	for range 3 {
		wg.Go(func() {
			defer func() { done <- struct{}{} }()
			for range 200 {
				h := submit(t, context.Background(), e, key, "t", succeed)
				mu.Lock()
				hs = append(hs, h)
				mu.Unlock()
			}
		})
	}
	on := false
	for len(done) == 0 {
		on = !on
		if err := e.SetGroupOverride(paused, groupconc.GroupOverride{Paused: &on}); err != nil {
			t.Error(err)
			break
		}
	}
	assert.NoError(t, e.SetGroupOverride(paused, groupconc.GroupOverride{Paused: &last}))
	wg.Wait()
	return hs
}

// A task walking as its group pauses could join its group's line after
// the pause moved the others to the pause line. Under IsolationOff it
// then waited there holding a permit of the global cap, for the whole
// pause, and another group's task never ran. Each round pauses and
// resumes t/a, or t, while tasks are submitted to t/a, pauses it last
// while they still are, and then a task of b must run under a global cap
// of 1.
func TestTaskWalkingAsItsGroupPausesHoldsNoGlobalPermit(t *testing.T) {
	eachPause(t, "t/a", 30, pauseRacingSubmits)
}

// pauseRacingSubmits is one round: tasks are submitted to t/a while the
// key paused is paused and resumed, paused last.
func pauseRacingSubmits(t *testing.T, mode groupconc.IsolationMode, paused string) {
	e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").GlobalMaxInFlight(1).DefaultMaxConcurrencyPerGroup(1))
	hs := submitWhileToggling(t, e, "t/a", paused, true)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := submit(t, ctx, e, "b", "b", succeed).Await(ctx)
	require.NoError(t, err, "b never ran: %+v", groupStats(t, e, "t/a"))

	on := false
	require.NoError(t, e.SetGroupOverride(paused, groupconc.GroupOverride{Paused: &on}))
	for _, h := range hs {
		_, err := h.Await(ctx)
		require.NotErrorIs(t, err, context.DeadlineExceeded, "a task of t/a was left waiting: %+v", groupStats(t, e, "t/a"))
	}
}

// Tasks submitted while a resume walks a paused group's tasks on must not
// start ahead of them. Each round pauses t/g, or t, puts 30 tasks in its
// pause line, and resumes it while another caller submits more. With a
// limit of 1, every task of the first 30 must start before any later one.
func TestTasksSubmittedDuringAResumeStartBehindTheResumed(t *testing.T) {
	eachPause(t, "t/g", 60, resumeWhileSubmitting)
}

func resumeWhileSubmitting(t *testing.T, mode groupconc.IsolationMode, paused string) {
	e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(1))
	submit(t, t.Context(), e, "t/g", "first", succeed).Wait()
	var (
		mu      sync.Mutex
		started []string
		hs      []*groupconc.TaskHandle[int]
	)
	task := func(id string) groupconc.Task[int] {
		return func(context.Context) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			started = append(started, id)
			return 0, nil
		}
	}
	on := true
	require.NoError(t, e.SetGroupOverride(paused, groupconc.GroupOverride{Paused: &on}))
	for range 30 {
		hs = append(hs, submit(t, t.Context(), e, "t/g", "old", task("old")))
	}
	stop := make(chan struct{})
	var late []*groupconc.TaskHandle[int]
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			late = append(late, submit(t, t.Context(), e, "t/g", "late", task("late")))
			select {
			case <-stop:
				return
			default:
			}
		}
	})
	on = false
	require.NoError(t, e.SetGroupOverride(paused, groupconc.GroupOverride{Paused: &on}))
	close(stop)
	wg.Wait()
	for _, h := range append(hs, late...) {
		h.Wait()
	}
	mu.Lock()
	defer mu.Unlock()
	require.NotContains(t, started[:30], "late", "a task submitted during the resume started ahead of one resumed")
}

// A resume nudges a caller blocked on a queue of no slots, as its task
// may start now. The caller could walk again before the resume had
// drained the pause line, wait behind it, be turned away for want of a
// slot, and block again with no nudge to come. Each round blocks a caller
// on t/g's queue of no slots while the key paused is paused, and then
// resumes it: the caller's task must be accepted and run.
func TestResumeLetsInACallerBlockedOnAQueueOfNoSlots(t *testing.T) {
	eachPause(t, "t/g", 150, func(t *testing.T, mode groupconc.IsolationMode, paused string) {
		synctest.Test(t, func(t *testing.T) { resumeBlockedCaller(t, mode, paused) })
	})
}

func resumeBlockedCaller(t *testing.T, mode groupconc.IsolationMode, paused string) {
	e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultQueueThresholdPerGroup(0))
	submit(t, t.Context(), e, "t/g", "first", succeed).Wait()
	pause(t, e, paused, true)
	b := submitBlocking(t.Context(), e, "t/g", "b", succeed, groupconc.SubmitOptions{})
	synctest.Wait()
	require.Equal(t, 1, groupStats(t, e, "t/g").Blocked)
	pause(t, e, paused, false)
	synctest.Wait()
	require.True(t, b.returned(), "the caller still waits: %+v", groupStats(t, e, "t/g"))
	require.NoError(t, b.err)
	assert.Equal(t, groupconc.StatusSuccess, b.h.Wait().Status)
}

// TestResumeLetsInACallerBlockedOnAQueueOfNoSlotsOnceDrained is the test
// above with w of p/d in tenant p's pause line as p resumes: it waited for
// the global permit as p paused. b of p/c, blocked meanwhile, is let in
// once the drain has walked w on. No slot of p/c's queue frees to wake it.
// Under IsolationOff only: under fair share a task waiting for a global
// permit holds a slot of its group's queue, so w would be turned away.
func TestResumeLetsInACallerBlockedOnAQueueOfNoSlotsOnceDrained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, modeBuilder(groupconc.IsolationOff).ParentSeparator("/").GlobalMaxInFlight(1).DefaultQueueThresholdPerGroup(0))
		gate := make(chan struct{})
		x := submit(t, t.Context(), e, "x", "x", gated(gate, 0))
		w := submit(t, t.Context(), e, "p/d", "w", succeed)
		pause(t, e, "p", true)
		b := submitBlocking(t.Context(), e, "p/c", "b", succeed, groupconc.SubmitOptions{})
		synctest.Wait()
		require.Equal(t, 1, groupStats(t, e, "p/c").Blocked)
		pause(t, e, "p", false)
		synctest.Wait()
		require.True(t, b.returned(), "the caller still waits: %+v", groupStats(t, e, "p/c"))
		require.NoError(t, b.err)
		close(gate)
		quiesce(t, e, x, w, b.h)
	})
}

// eachPause runs round n times in each isolation mode, pausing the group
// key, then its parent t.
func eachPause(t *testing.T, key string, n int, round func(t *testing.T, mode groupconc.IsolationMode, paused string)) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, paused := range []string{key, "t"} {
			t.Run("paused="+paused, func(t *testing.T) {
				for range n {
					round(t, mode, paused)
				}
			})
		}
	})
}
