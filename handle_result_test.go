package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A handle keeps parts of its result packed, or in storage it shares while
// the task waits: the tests here pin that the result reads back whole.

// TestCancelReadyTaskKeepsTheQueue: tasks admitted inside Submit wait in a
// queue for a goroutine, linked through storage that the result's Err uses
// later; a Cancel that completes one of them there leaves the tasks after
// it queued, and its result is CANCELLED with Err context.Canceled.
func TestCancelReadyTaskKeepsTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		for round := range 200 {
			hs := make([]*groupconc.TaskHandle[int], 4)
			for i := range hs {
				hs[i] = submit(t, t.Context(), e, fmt.Sprint(i), fmt.Sprint(round), func(context.Context) (int, error) { return i, nil })
			}
			cancelled := hs[1].Cancel() // false if it ran already
			for i, h := range hs {
				r := h.Wait()
				if i == 1 && cancelled {
					assert.Equal(t, groupconc.StatusCancelled, r.Status, "round %d", round)
					assert.ErrorIs(t, r.Err, context.Canceled, "round %d", round)
					assert.Equal(t, r.Start, r.End, "round %d: a cancelled task starts as it ends", round)
					continue
				}
				require.Equal(t, groupconc.StatusSuccess, r.Status, "round %d, task %d", round, i)
				assert.NoError(t, r.Err)
				assert.Equal(t, i, r.Value)
			}
		}
	})
}

// TestCancelCauseIsTheResultsErr: a task whose caller's context ends while
// the executor waits for it completes CANCELLED with an Err naming the
// context's cause, read back from the task's context.
func TestCancelCauseIsTheResultsErr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		defer e.Close()
		gate := make(chan struct{})
		first := submit(t, t.Context(), e, "g", "first", gated(gate, 0))
		cause := errors.New("caller gave up")
		ctx, cancel := context.WithCancelCause(t.Context())
		h := submit(t, ctx, e, "g", "second", succeed)
		cancel(cause)
		r := h.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.ErrorIs(t, r.Err, context.Canceled)
		assert.ErrorIs(t, r.Err, cause)
		assert.Equal(t, r.Start, r.End)
		close(gate)
		first.Wait()
	})
}

// TestLongRunTimesReadBackExactly: a task that ends more than 6 days
// after it was submitted (past what the handle packs, 2^49 ns) still
// reports its Start and End to the nanosecond, as do those that end just
// within it and just past it.
func TestLongRunTimesReadBackExactly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		const wait, run = 3*24*time.Hour + time.Nanosecond, 105*24*time.Hour + 7*time.Nanosecond
		first := submit(t, t.Context(), e, "g", "first", func(context.Context) (int, error) {
			time.Sleep(wait)
			return 0, nil
		})
		h := submit(t, t.Context(), e, "g", "second", func(context.Context) (int, error) {
			time.Sleep(run)
			return 2, errors.New("late")
		})
		r := h.Wait()
		assert.Equal(t, groupconc.StatusFailed, r.Status)
		assert.EqualError(t, r.Err, "late")
		assert.Equal(t, wait, r.Start.Sub(r.Submitted), "Start")
		assert.Equal(t, wait+run, r.End.Sub(r.Submitted), "End")
		assert.Equal(t, groupconc.StatusSuccess, first.Wait().Status)
		for _, run := range []time.Duration{1<<49 - 1, 1 << 49} {
			h := submit(t, t.Context(), e, "g", "edge", func(context.Context) (int, error) {
				time.Sleep(run)
				return 0, nil
			})
			r := h.Wait()
			assert.Equal(t, run, r.End.Sub(r.Submitted), "End")
		}
	})
}

// TestCancellingARunningTaskKeepsItsStart: Cancel completes the handle at
// once, and a task whose function had begun keeps the Start it began at:
// its QueueWait is its wait for permits, its Duration its run until Cancel.
// The listener hears the same result. An adaptive group runs its tasks on
// a path of its own (runSampled), so the test runs there too.
func TestCancellingARunningTaskKeepsItsStart(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, adaptive := range []bool{false, true} {
			t.Run(fmt.Sprint("adaptive=", adaptive), func(t *testing.T) { cancelKeepsStart(t, mode, adaptive) })
		}
	})
}

func cancelKeepsStart(t *testing.T, mode groupconc.IsolationMode, adaptive bool) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		b := groupconc.NewPolicyBuilder().Isolation(mode).TaskLifecycleListener(rec)
		if adaptive {
			b = b.AdaptiveConcurrency(groupconc.AdaptiveConfig{New: new(script).new})
		}
		e := newExecutor(t, b)
		time.Sleep(time.Second) // the tasks' times are offsets from the executor's clock: not 0
		gate := make(chan struct{})
		first := submit(t, t.Context(), e, "g", "first", block(gate))
		h := submit(t, t.Context(), e, "g", "second", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		})
		time.Sleep(2 * time.Second)
		close(gate) // first ends; second runs from now, until its context ends
		first.Wait()
		time.Sleep(time.Second)
		require.True(t, h.Cancel())
		r := h.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.Equal(t, 2*time.Second, r.QueueWait(), "QueueWait")
		assert.Equal(t, time.Second, r.Duration(), "Duration")
		synctest.Wait()
		told, ok := rec.Result("g", "second")
		require.True(t, ok, "OnCompleted")
		assert.Equal(t, [2]time.Time{r.Start, r.End}, [2]time.Time{told.Start, told.End}, "the listener's Start and End")
	})
}

// TestATaskThatNeverRanStartsAsItEnds: the Start of a task that never ran
// is its End, however long it waited: its QueueWait is that wait, its
// Duration zero. It ended waiting, by its context or displaced by a newer
// task under RejectDiscardOldest.
func TestATaskThatNeverRanStartsAsItEnds(t *testing.T) {
	for _, c := range []struct {
		how    string
		status groupconc.TaskStatus
		err    string
	}{
		{"ctx", groupconc.StatusCancelled, "context canceled"}, // no cause of its own to add
		{"displaced", groupconc.StatusRejected, ""},
	} {
		t.Run(c.how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(1).
					DefaultQueueThresholdPerGroup(1).RejectionPolicy(groupconc.RejectDiscardOldest))
				k := newGatedTask(t, 1)
				first := submit(t, t.Context(), e, "g", "first", k.Fn)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				h := submit(t, ctx, e, "g", "second", succeed)
				time.Sleep(time.Second) // fake clock: the wait
				third := first
				if c.how == "ctx" {
					cancel()
				} else {
					third = submit(t, t.Context(), e, "g", "third", succeed)
				}
				r := h.Wait()
				assert.Equal(t, c.status, r.Status)
				if c.err != "" {
					assert.EqualError(t, r.Err, c.err)
				}
				assert.Equal(t, r.End, r.Start, "Start")
				assert.Equal(t, time.Second, r.QueueWait())
				k.Release()
				first.Wait()
				third.Wait()
			})
		})
	}
}

// TestATaskHandedItsPermitsStartsAtItsReleasersEnd: in real time, where
// every clock reading differs, a task handed its last permit by a task that
// ended starts at that task's End, to the nanosecond, and its listener
// hears the End its handle shows.
func TestATaskHandedItsPermitsStartsAtItsReleasersEnd(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		rec := newRecorder()
		e := newExecutor(t, modeBuilder(mode).DefaultMaxConcurrencyPerGroup(1).TaskLifecycleListener(rec))
		k := newGatedTask(t, 0)
		first := submit(t, t.Context(), e, "g", "first", k.Fn)
		second := submit(t, t.Context(), e, "g", "second", succeed)
		k.Release()
		r1, r2 := first.Wait(), second.Wait()
		require.Equal(t, groupconc.StatusSuccess, r2.Status)
		assert.Equal(t, r1.End, r2.Start, "second's Start, first's End")
		told, ok := rec.Result("g", "first")
		require.True(t, ok, "OnCompleted")
		assert.Equal(t, r1.End, told.End, "the listener's End, the handle's")
	})
}
