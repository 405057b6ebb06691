package groupconc_test

// A task that finished keeps its result as it finished. ExecuteAll whose
// ctx ends, also just after the task or as it completes, and a Cancel once
// its function has returned, leave that result as it is.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// endsWhenAsked is a context that ends the first time its Err is asked for
// once armed. With a hold channel, that Err call then waits for hold to
// close, so that ExecuteAll sees ctx end while the caller of Err is held.
type endsWhenAsked struct {
	context.Context
	cancel context.CancelFunc
	armed  func() bool
	hold   chan struct{}
}

func (c *endsWhenAsked) Err() error {
	if c.armed() {
		c.cancel()
		if c.hold != nil {
			<-c.hold
		}
	}
	return c.Context.Err()
}

// TestExecuteAllKeepsEveryResultWhenItsContextEndsAfterTheLastTask: ctx
// ends at the first look once every function has returned. No result is
// rewritten as CANCELLED. ctx ended before ExecuteAll returned, so, as the
// contract says, ExecuteAll returns ctx.Err().
func TestExecuteAllKeepsEveryResultWhenItsContextEndsAfterTheLastTask(t *testing.T) {
	for name, c := range map[string]struct {
		threshold int
		opts      groupconc.SubmitOptions
	}{
		"ExecuteAll": {groupconc.Unlimited, groupconc.SubmitOptions{}},
		// The third task of a group waits for a slot before it is accepted.
		"ExecuteAllWith Block": {0, groupconc.SubmitOptions{Block: true, Priority: groupconc.PriorityHigh}},
	} {
		t.Run(name, func(t *testing.T) {
			e := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(2).DefaultQueueThresholdPerGroup(c.threshold))
			var returned atomic.Int32
			tasks := make([]groupconc.GroupTask[int], 6)
			for i := range tasks {
				tasks[i] = groupconc.GroupTask[int]{
					GroupKey: []string{"a", "b"}[i%2], TaskID: string(rune('p' + i)),
					Task: func(context.Context) (int, error) {
						defer returned.Add(1)
						if i == 3 {
							return 0, errBoom
						}
						return i * 10, nil
					},
				}
			}
			inner, cancel := context.WithCancel(t.Context())
			defer cancel()
			ctx := &endsWhenAsked{Context: inner, cancel: cancel,
				armed: func() bool { return returned.Load() == int32(len(tasks)) }}
			rs, err := groupconc.ExecuteAllWith(ctx, e, tasks, c.opts)
			require.Len(t, rs, len(tasks))
			for i, r := range rs {
				assert.Equal(t, tasks[i].TaskID, r.TaskID, "results[%d]", i)
				if i == 3 {
					assert.Equal(t, groupconc.StatusFailed, r.Status, "results[%d]: Err %v", i, r.Err)
					assert.Equal(t, errBoom, r.Err, "results[%d]", i)
					continue
				}
				assert.Equal(t, groupconc.StatusSuccess, r.Status, "results[%d]: Err %v", i, r.Err)
				assert.Equal(t, i*10, r.Value, "results[%d]", i)
			}
			require.Error(t, inner.Err(), "the context did not end inside ExecuteAll")
			assert.ErrorIs(t, err, context.Canceled)
		})
	}
}

// observing is an adaptive limit that calls f with each sample and keeps
// the limit.
type observing func(groupconc.LimitSample)

func (f observing) Observe(s groupconc.LimitSample) int { f(s); return s.Limit }

// TestExecuteAllKeepsTheResultOfAFunctionThatReturnedBeforeItsContextEnded:
// ctx ends after the function (or rejection handler) returned, but before
// the executor has completed its handle. ExecuteAll, waiting for that
// handle, sees ctx end first. The returned outcome still stands. Each case
// holds one such moment open: an error being classified (is it ctx's?), or
// an adaptive limit observing the sample, which already says how it ended.
func TestExecuteAllKeepsTheResultOfAFunctionThatReturnedBeforeItsContextEnded(t *testing.T) {
	for _, c := range []struct {
		name string
		want groupconc.TaskStatus
	}{
		{"an error, classified", groupconc.StatusFailed},
		{"a value, observed", groupconc.StatusSuccess},
		{"a rejection handler's error, classified", groupconc.StatusFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				observed := c.want == groupconc.StatusSuccess
				handled := c.name == "a rejection handler's error, classified"
				var returned atomic.Bool
				inner, cancel := context.WithCancel(t.Context())
				defer cancel()
				hold := make(chan struct{})
				ctx := &endsWhenAsked{Context: inner, cancel: cancel, hold: hold,
					armed: func() bool { return !observed && returned.CompareAndSwap(true, false) }}
				gate := make(chan struct{})
				returns := func() (int, error) {
					<-gate
					returned.Store(true)
					if observed {
						return 7, nil
					}
					return 0, errBoom
				}
				var sampled groupconc.TaskStatus
				b := builder()
				if observed {
					b.AdaptiveConcurrency(groupconc.AdaptiveConfig{New: func(string, int, int) groupconc.AdaptiveLimit {
						return observing(func(s groupconc.LimitSample) {
							sampled = s.Status
							cancel()
							<-hold
						})
					}})
				}
				if handled {
					b.DefaultQueueThresholdPerGroup(0).RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) {
						return returns()
					})
				}
				e := newExecutor(t, b)
				var holder *groupconc.TaskHandle[int]
				if handled { // "returns" finds its group full and is turned away
					holder = submit(t, t.Context(), e, "a", "holder", gated(gate, 1))
				}
				tasks := []groupconc.GroupTask[int]{{GroupKey: "a", TaskID: "returns", Task: func(context.Context) (int, error) {
					return returns()
				}}}
				var rs []groupconc.GroupResult[int]
				var err error
				done := make(chan struct{})
				go func() {
					defer close(done)
					rs, err = groupconc.ExecuteAll(ctx, e, tasks)
				}()
				synctest.Wait() // ExecuteAll waits for "returns"
				close(gate)
				synctest.Wait() // ctx has ended while the executor is held
				close(hold)
				<-done
				require.Len(t, rs, 1)
				r := rs[0]
				assert.Equal(t, c.want, r.Status, "returns: Err %v", r.Err)
				if observed {
					assert.Equal(t, 7, r.Value)
					assert.Equal(t, groupconc.StatusSuccess, sampled, "the sample's status")
				} else {
					assert.Equal(t, errBoom, r.Err)
				}
				assert.ErrorIs(t, err, context.Canceled)
				if holder != nil {
					holder.Wait()
				}
			})
		})
	}
}

// TestExecuteAllKeepsAResultDecidedAsItsContextEnds: the task's outcome is
// decided, and its handle about to complete, when ctx ends. ExecuteAll
// sees ctx end first, yet reports the task's own result.
func TestExecuteAllKeepsAResultDecidedAsItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		// OnCompleted runs once the outcome is decided, before the handle
		// completes.
		l := groupconc.ListenerFuncs{Completed: func(_, id string, _ groupconc.GroupResult[any]) {
			if id == "last" {
				cancel()
			}
		}}
		e := newExecutor(t, builder().TaskLifecycleListener(l))
		gate := make(chan struct{})
		tasks := []groupconc.GroupTask[int]{
			{GroupKey: "a", TaskID: "first", Task: succeed},
			{GroupKey: "b", TaskID: "last", Task: gated(gate, 7)},
		}
		var rs []groupconc.GroupResult[int]
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			rs, err = groupconc.ExecuteAll(ctx, e, tasks)
		}()
		synctest.Wait() // ExecuteAll waits for "last"
		close(gate)
		<-done
		require.Len(t, rs, 2)
		assert.Equal(t, groupconc.StatusSuccess, rs[0].Status)
		assert.Equal(t, groupconc.StatusSuccess, rs[1].Status, "last: Err %v", rs[1].Err)
		assert.Equal(t, 7, rs[1].Value)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, uint64(2), e.Stats().Succeeded)
	})
}

var errStop = errors.New("stop")

// TestExecuteAllKeepsEveryFinishedResultAsItFinishedWhenItsContextEnds:
// ctx ends while some tasks run or wait. Each task that had finished keeps
// its status, value, Err and times, whatever ended it. Only the others are
// CANCELLED with ctx's error.
func TestExecuteAllKeepsEveryFinishedResultAsItFinishedWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().PerGroupQueueThreshold(map[string]int{"r": 0})) // concurrency 1
		gate := make(chan struct{})
		defer close(gate)
		var waitingRan atomic.Bool
		untilDone := func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, fmt.Errorf("%w: %w", ctx.Err(), context.Cause(ctx))
		}
		tasks := []groupconc.GroupTask[int]{
			{GroupKey: "a", TaskID: "succeeds", Task: func(context.Context) (int, error) {
				time.Sleep(time.Second) // fake clock
				return 1, nil
			}},
			{GroupKey: "b", TaskID: "fails", Task: func(context.Context) (int, error) { return 0, errBoom }},
			{GroupKey: "c", TaskID: "panics", Task: func(context.Context) (int, error) { panic("x") }},
			{GroupKey: "r", TaskID: "holds r", Task: gated(gate, 2)}, // ignores its context
			{GroupKey: "r", TaskID: "rejected", Task: neverRuns(&waitingRan)},
			{GroupKey: "s", TaskID: "shut down", Task: untilDone},
			{GroupKey: "s", TaskID: "shut down waiting", Task: neverRuns(&waitingRan)},
			{GroupKey: "d", TaskID: "runs", Task: gated(gate, 3)},
			{GroupKey: "d", TaskID: "waits", Task: neverRuns(&waitingRan)},
		}
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		start := time.Now()
		var rs []groupconc.GroupResult[int]
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			rs, err = groupconc.ExecuteAll(ctx, e, tasks)
		}()
		time.Sleep(2 * time.Second) // fake clock: "succeeds" ends at 1s
		e.ShutdownGroup("s")
		time.Sleep(time.Second) // fake clock
		cancel(errStop)
		<-done
		require.Len(t, rs, len(tasks))
		assert.ErrorIs(t, err, context.Canceled)
		ended := start.Add(3 * time.Second)

		byID := map[string]groupconc.GroupResult[int]{}
		for i, r := range rs {
			require.Equal(t, tasks[i].TaskID, r.TaskID, "results[%d]", i)
			byID[r.TaskID] = r
		}
		kept := func(id string, status groupconc.TaskStatus, end time.Time) groupconc.GroupResult[int] {
			r := byID[id]
			assert.Equal(t, status, r.Status, "%s: Err %v", id, r.Err)
			assert.Equal(t, end, r.End, "%s: End", id)
			assert.NotErrorIs(t, r.Err, errStop, "%s: Err", id)
			return r
		}
		assert.Equal(t, 1, kept("succeeds", groupconc.StatusSuccess, start.Add(time.Second)).Value)
		assert.Equal(t, errBoom, kept("fails", groupconc.StatusFailed, start).Err)
		var pe *groupconc.PanicError
		assert.ErrorAs(t, kept("panics", groupconc.StatusFailed, start).Err, &pe)
		var re *groupconc.RejectedError
		assert.ErrorAs(t, kept("rejected", groupconc.StatusRejected, start).Err, &re)
		for _, id := range []string{"shut down", "shut down waiting"} {
			r := kept(id, groupconc.StatusCancelled, start.Add(2*time.Second))
			assert.ErrorIs(t, r.Err, groupconc.ErrGroupShutdown, "%s: Err", id)
		}
		for _, id := range []string{"holds r", "runs", "waits"} {
			r := byID[id]
			assert.Equal(t, groupconc.StatusCancelled, r.Status, "%s", id)
			assert.Equal(t, ended, r.End, "%s: End", id)
			assert.ErrorIs(t, r.Err, context.Canceled, "%s: Err", id)
			assert.ErrorIs(t, r.Err, errStop, "%s: Err", id)
		}
		synctest.Wait()
		assert.False(t, waitingRan.Load(), "a task that was waiting or rejected ran")
	})
}

// TestCancelAfterTheFunctionReturnedLeavesItsOutcome: the function has
// returned and an adaptive limit is observing its sample. The handle is not
// complete yet, but Cancel reports false and the handle completes with what
// the function returned.
func TestCancelAfterTheFunctionReturnedLeavesItsOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seen, hold := make(chan struct{}), make(chan struct{})
		e := newExecutor(t, builder().AdaptiveConcurrency(groupconc.AdaptiveConfig{
			New: func(string, int, int) groupconc.AdaptiveLimit {
				return observing(func(groupconc.LimitSample) {
					close(seen)
					<-hold
				})
			},
		}))
		h := submit(t, t.Context(), e, "a", "t", func(context.Context) (int, error) { return 7, nil })
		<-seen
		assert.False(t, h.IsDone(), "IsDone while the sample is observed")
		assert.False(t, h.Cancel(), "Cancel after the function returned")
		close(hold)
		r := h.Wait()
		assert.Equal(t, groupconc.StatusSuccess, r.Status, "Err %v", r.Err)
		assert.Equal(t, 7, r.Value)
	})
}
