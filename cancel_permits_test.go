package groupconc_test

// Cancel of a task whose function has not begun: its permits go back
// before its handle completes, as the design promises of every task.

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCancelOfAWaitingTaskGivesItsPermitsAndSlotBackBeforeItReturns: a
// caller that cancels a waiting task and then submits the next finds the
// first one's permits and queue slot free, without waiting for anything.
func TestCancelOfAWaitingTaskGivesItsPermitsAndSlotBackBeforeItReturns(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for range 50 {
			e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().Isolation(mode).
				GlobalMaxInFlight(2).DefaultQueueThresholdPerGroup(1)))
			gate := make(chan struct{})
			running := submit(t, t.Context(), e, "g", "running", block(gate))
			waiting := submit(t, t.Context(), e, "g", "waiting", func(context.Context) (int, error) { return 0, nil })
			require.True(t, waiting.Cancel())
			g, _ := e.GroupStats("g")
			s := e.Stats()
			next := submit(t, t.Context(), e, "g", "next", func(context.Context) (int, error) { return 2, nil })
			ok := assert.Equal(t, 0, g.Waiting, "Waiting after Cancel") &&
				assert.Equal(t, 1, g.InFlight, "InFlight after Cancel") &&
				assert.Equal(t, 1, s.GlobalInFlight, "GlobalInFlight after Cancel") &&
				assert.False(t, next.IsDone(), "the next task, submitted into the freed slot, is done: %v", next.IsDone() && next.Wait().Status == groupconc.StatusRejected)
			close(gate)
			assert.Equal(t, groupconc.StatusSuccess, running.Wait().Status)
			assert.Equal(t, groupconc.StatusSuccess, next.Wait().Status)
			assert.Equal(t, groupconc.StatusCancelled, waiting.Wait().Status)
			require.NoError(t, e.Shutdown(t.Context()))
			if !ok {
				return
			}
		}
	})
}

// TestCancelOfAnAdmittedTaskNotYetStartedGivesItsPermitsBackBeforeItReturns:
// a task that got every permit inside Submit waits only for a goroutine.
// Cancelled before one takes it, it never runs, and its permits are free
// once Cancel returns: the next task, which may not wait, starts.
func TestCancelOfAnAdmittedTaskNotYetStartedGivesItsPermitsBackBeforeItReturns(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		b := groupconc.NewPolicyBuilder().Isolation(mode).GlobalMaxInFlight(1).DefaultQueueThresholdPerGroup(0)
		if mode == groupconc.IsolationOff {
			b.GlobalQueueThreshold(0)
		}
		p := mustBuild(t, b)
		checked := 0
		for range 200 {
			e := groupconc.New(p)
			var ran atomic.Bool
			first := submit(t, t.Context(), e, "g", "first", func(context.Context) (int, error) {
				ran.Store(true)
				return 1, nil
			})
			if !first.Cancel() {
				require.NoError(t, e.Shutdown(t.Context()))
				continue // it had finished already
			}
			s := e.Stats()
			next := submit(t, t.Context(), e, "g", "next", func(context.Context) (int, error) { return 2, nil })
			r := next.Wait()
			require.NoError(t, e.Shutdown(t.Context()))
			if c := first.Wait(); ran.Load() || c.Start.Before(c.End) {
				// A worker had taken it to run, which Cancel finds begun: it
				// keeps its permits until that worker is done with it.
				continue
			}
			checked++
			if !assert.Equal(t, 0, s.GlobalInFlight, "GlobalInFlight after Cancel") ||
				!assert.Equal(t, 0, s.Running, "Running after Cancel") ||
				!assert.Equal(t, groupconc.StatusSuccess, r.Status, "the next task: %v", r.Err) {
				return
			}
		}
		t.Logf("%d of 200 cancelled before they began", checked)
		assert.Positive(t, checked, "no Cancel came before a worker took its task")
	})
}

// TestCancelRacingTheWorkersAndLiveChangesLeavesNoPermitHeld: Cancels that
// race the goroutines taking tasks to run, while limits change and groups
// shut down, leave every task ended once, told to the listener in balance,
// and no permit or count held once all is done.
func TestCancelRacingTheWorkersAndLiveChangesLeavesNoPermitHeld(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		rec := newRecorder()
		build := func(limit int) *groupconc.GroupPolicy {
			return mustBuild(t, groupconc.NewPolicyBuilder().Isolation(mode).TaskLifecycleListener(rec).
				GlobalMaxInFlight(limit).DefaultMaxConcurrencyPerGroup(limit/2+1).DefaultQueueThresholdPerGroup(8))
		}
		e := groupconc.New(build(4))
		keys := []string{"a", "b", "c"}
		stop := make(chan struct{})
		changed := make(chan struct{})
		go func() {
			defer close(changed)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				assert.NoError(t, e.UpdatePolicy(build(1+i%6)))
				e.ShutdownGroup(keys[i%3])
			}
		}()
		const workers, each = 4, 150
		handles := make(chan *groupconc.TaskHandle[int], workers*each)
		done := make(chan struct{})
		for w := range workers {
			go func() {
				defer func() { done <- struct{}{} }()
				for i := range each {
					h, err := groupconc.Submit(t.Context(), e, keys[(w+i)%3], fmt.Sprintf("t%d-%d", w, i), func(context.Context) (int, error) { return i, nil })
					if !assert.NoError(t, err) {
						return
					}
					if i%2 == 0 {
						h.Cancel()
					}
					handles <- h
				}
			}()
		}
		for range workers {
			<-done
		}
		close(stop)
		<-changed
		close(handles)
		for h := range handles {
			h.Wait()
		}
		require.NoError(t, e.Shutdown(t.Context()))
		s := e.Stats()
		assert.Zero(t, s.Running, "Running")
		assert.Zero(t, s.Waiting, "Waiting")
		assert.Zero(t, s.GlobalInFlight, "GlobalInFlight")
		assert.Equal(t, s.Submitted, s.Succeeded+s.Failed+s.Cancelled+s.Rejected, "outcomes")
		assert.Equal(t, int(s.Submitted), rec.Count(evSubmitted), "OnSubmitted")
		// No task turned away runs here: submitted = completed + rejected.
		assert.Equal(t, rec.Count(evSubmitted), rec.Count(evCompleted)+rec.Count(evRejected), "listener balance")
	})
}
