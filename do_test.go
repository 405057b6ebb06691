package groupconc_test

import (
	"context"
	"errors"
	"runtime/debug"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// doAsync runs Do on a goroutine of its own and reports what it returned.
type doAsync struct {
	v    int
	err  error
	done chan struct{}
}

func goDo(ctx context.Context, e *groupconc.GroupExecutor, key string, fn groupconc.Task[int], o groupconc.SubmitOptions) *doAsync {
	d := &doAsync{done: make(chan struct{})}
	go func() {
		defer close(d.done)
		d.v, d.err = groupconc.Do(ctx, e, key, fn, o)
	}()
	return d
}

func (d *doAsync) returned() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

func TestDoRunsOnTheCallersGoroutineUnderTheGroupsLimit(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e := newExecutor(t, modeBuilder(mode).TaskLifecycleListener(rec))
			v, err := groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) {
				if !strings.Contains(string(debug.Stack()), "TestDoRunsOnTheCallersGoroutine") {
					return 0, errors.New("fn runs on another goroutine")
				}
				return 7, nil
			}, groupconc.SubmitOptions{})
			require.NoError(t, err)
			assert.Equal(t, 7, v)

			gate := make(chan struct{})
			first := goDo(t.Context(), e, "a", func(context.Context) (int, error) { <-gate; return 1, nil }, groupconc.SubmitOptions{})
			synctest.Wait()
			second := goDo(t.Context(), e, "a", func(context.Context) (int, error) { return 2, nil }, groupconc.SubmitOptions{})
			synctest.Wait()
			assert.False(t, second.returned(), "a second Do ran past the limit of 1")
			gs := groupStats(t, e, "a")
			assert.Equal(t, [2]int{1, 1}, [2]int{gs.Running, gs.Waiting}, "running and waiting")
			close(gate)
			<-first.done
			<-second.done
			assert.Equal(t, [2]int{1, 2}, [2]int{first.v, second.v})
			synctest.Wait()
			require.NoError(t, e.Quiescent())
			st := e.Stats()
			assert.Equal(t, uint64(3), st.Submitted)
			assert.Equal(t, uint64(3), st.Succeeded)
			for _, id := range []string{"do-1", "do-2", "do-3"} {
				assert.Equal(t, []string{evSubmitted, evStarted, evCompleted}, rec.Events("a", id), "the listener hears of %s as of a task, under one ID", id)
			}
		})
	})
}

func TestDoWhoseContextEndsWhileWaitingNeverRunsFn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		k := newGatedTask(t, 0)
		h := submit(t, t.Context(), e, "a", "run", k.Fn)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		ran := false
		_, err := groupconc.Do(ctx, e, "a", func(context.Context) (int, error) { ran = true; return 0, nil }, groupconc.SubmitOptions{})
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.False(t, ran)
		k.Release()
		quiesce(t, e, h)
	})
}

func TestDoTurnedAwayIsAnErrorUnderEveryPolicyButCallerRuns(t *testing.T) {
	for _, rp := range []groupconc.RejectionPolicy{groupconc.RejectAbort, groupconc.RejectDiscard, groupconc.RejectDiscardOldest, groupconc.RejectCallerRuns} {
		t.Run(rp.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, builder().DefaultQueueThresholdPerGroup(0).RejectionPolicy(rp))
				k := newGatedTask(t, 0)
				h := submit(t, t.Context(), e, "a", "run", k.Fn)
				synctest.Wait()
				v, err := groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) { return 5, nil }, groupconc.SubmitOptions{})
				if rp == groupconc.RejectCallerRuns {
					assert.NoError(t, err)
					assert.Equal(t, 5, v, "caller-runs runs fn without permits")
				} else {
					var re *groupconc.RejectedError
					require.ErrorAs(t, err, &re)
					assert.Equal(t, groupconc.ReasonGroupQueueFull, re.Reason)
					assert.Equal(t, "do-1", re.TaskID, "the error names the Do's task, with no listener to ask first")
					assert.Zero(t, v)
				}
				k.Release()
				quiesce(t, e, h)
			})
		})
	}
}

func TestDoPanicGoesUpAndGivesThePermitsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		func() {
			defer func() { assert.Equal(t, "boom", recover()) }()
			_, _ = groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) { panic("boom") }, groupconc.SubmitOptions{})
		}()
		synctest.Wait()
		require.NoError(t, e.Quiescent())
		assert.Equal(t, uint64(1), e.Stats().Failed)
		v, err := groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) { return 3, nil }, groupconc.SubmitOptions{})
		assert.NoError(t, err)
		assert.Equal(t, 3, v, "the group's permit is free again")
	})
}

func TestDoInsideATaskRunsUnderThatTasksPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder()) // a limit of 1: a Do that waited would deadlock
		h := submit(t, t.Context(), e, "a", "outer", func(ctx context.Context) (int, error) {
			return groupconc.Do(ctx, e, "a", func(context.Context) (int, error) { return 9, nil }, groupconc.SubmitOptions{})
		})
		r := h.Wait()
		require.NoError(t, r.Err)
		assert.Equal(t, 9, r.Value)
		quiesce(t, e, h)
	})
}

// A task that waits for another needing the permit it holds waits until
// its own wait ends (docs/outcomes.md), where Do runs at once.
func TestWaitingInsideATaskForItsOwnPermitEndsOnlyWithTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder()) // a limit of 1
		var inner *groupconc.TaskHandle[int]
		outer := submit(t, t.Context(), e, "a", "outer", func(ctx context.Context) (int, error) {
			// Submit and assert, not the submit helper: its require would
			// stop this goroutine, the task's, rather than the test's.
			var err error
			inner, err = groupconc.Submit(ctx, e, "a", "inner", func(context.Context) (int, error) { return 1, nil })
			if !assert.NoError(t, err) {
				return 0, err
			}
			wait, cancel := context.WithTimeout(ctx, time.Hour) // fake clock
			defer cancel()
			r, err := inner.Await(wait)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.False(t, inner.IsDone(), "inner waits for the permit outer holds")
			v, err := groupconc.Do(ctx, e, "a", func(context.Context) (int, error) { return 2, nil }, groupconc.SubmitOptions{})
			return r.Value + v, err
		})
		assert.Equal(t, 2, outer.Wait().Value)
		assert.Equal(t, groupconc.StatusCancelled, inner.Wait().Status, "inner's context was outer's")
		quiesce(t, e, outer, inner)
	})
}

// A Do on a goroutine its task started shares the task's permits only
// while the task runs. When the task returns, they go back and fn's
// context is cancelled, though fn still runs.
func TestDoInsideATaskIsCancelledWhenTheTaskReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder()) // a limit of 1
		started := make(chan struct{})
		var d *doAsync
		h := submit(t, t.Context(), e, "a", "outer", func(ctx context.Context) (int, error) {
			d = goDo(ctx, e, "a", func(ctx context.Context) (int, error) {
				close(started)
				<-ctx.Done()
				return 0, context.Cause(ctx)
			}, groupconc.SubmitOptions{})
			<-started
			return 1, nil
		})
		require.NoError(t, h.Wait().Err)
		<-d.done
		assert.ErrorIs(t, d.err, context.Canceled, "fn's context ends with its task")
		v, err := groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) { return 2, nil }, groupconc.SubmitOptions{})
		require.NoError(t, err)
		assert.Equal(t, 2, v, "the task's permit is back")
		quiesce(t, e, h)
	})
}

// A context kept past its task's end (context.WithoutCancel keeps it
// from being cancelled) is inside no task: a Do with it waits for permits
// of its own, and a full group turns it away.
func TestDoWithAContextKeptPastItsTasksEndTakesPermitsOfItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().DefaultQueueThresholdPerGroup(0))
		kept := make(chan context.Context, 1)
		_, err := groupconc.Do(t.Context(), e, "a", func(ctx context.Context) (int, error) {
			kept <- context.WithoutCancel(ctx)
			return 0, nil
		}, groupconc.SubmitOptions{})
		require.NoError(t, err)
		bg := <-kept
		k := newGatedTask(t, 0)
		h := submit(t, t.Context(), e, "a", "busy", k.Fn)
		synctest.Wait()
		ran := false
		_, err = groupconc.Do(bg, e, "a", func(context.Context) (int, error) { ran = true; return 0, nil }, groupconc.SubmitOptions{})
		assert.False(t, ran, "fn ran while its group was full")
		assert.ErrorIs(t, err, groupconc.ErrRejected)
		blocked := make(chan *groupconc.TaskHandle[int], 1)
		go func() {
			b, err := groupconc.SubmitWith(bg, e, "a", "blocked", func(context.Context) (int, error) { return 0, nil }, groupconc.SubmitOptions{Block: true})
			assert.NoError(t, err)
			blocked <- b
		}()
		synctest.Wait()
		assert.Equal(t, 1, e.Stats().Blocked, "a Block submit waits for a slot")
		_, err = groupconc.Do(bg, e, "b", func(context.Context) (int, error) { return 1, nil }, groupconc.SubmitOptions{})
		require.NoError(t, err, "another group's permits are free")
		k.Release()
		quiesce(t, e, h, <-blocked)
		assert.Equal(t, uint64(1), e.Stats().Rejected)
	})
}

func TestDoIsCancelledByItsGroupsShutdownWhileFnRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		started := make(chan struct{})
		d := goDo(t.Context(), e, "a", func(ctx context.Context) (int, error) {
			close(started)
			<-ctx.Done()
			return 0, context.Cause(ctx)
		}, groupconc.SubmitOptions{})
		<-started
		e.ShutdownGroup("a")
		<-d.done
		assert.ErrorIs(t, d.err, groupconc.ErrGroupShutdown)
		synctest.Wait()
		require.NoError(t, e.Quiescent())
	})
}

func TestDoRefusesBadInputNamingIt(t *testing.T) {
	e := newExecutor(t, builder())
	_, err := groupconc.Do(t.Context(), e, "", func(context.Context) (int, error) { return 0, nil }, groupconc.SubmitOptions{})
	assert.ErrorIs(t, err, groupconc.ErrInvalidTask)
	assert.EqualError(t, err, "groupconc: invalid task: GroupKey is empty")
	_, err = groupconc.Do[int](t.Context(), e, "a", nil, groupconc.SubmitOptions{})
	assert.EqualError(t, err, "groupconc: invalid task: Task is nil")
	_, err = groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) { return 0, nil }, groupconc.SubmitOptions{Cost: -1})
	assert.ErrorIs(t, err, groupconc.ErrInvalidTask)
	assert.EqualError(t, err, "groupconc: invalid task: Cost -1 is negative")
}

// A Do's task ID is made when first asked for, by whichever goroutine owns
// the task then: here the one that takes a waiting Do out of line when its
// caller leaves, and the one that turns a Do away. Each Do keeps one ID
// from its first event to the error its caller gets.
func TestDoKeepsOneTaskIDWhoeverAsksFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		e := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(1).TaskLifecycleListener(rec))
		k := newGatedTask(t, 0)
		h := submit(t, t.Context(), e, "a", "run", k.Fn)
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		waiting := goDo(ctx, e, "a", func(context.Context) (int, error) { return 1, nil }, groupconc.SubmitOptions{})
		synctest.Wait()
		_, err := groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) { return 2, nil }, groupconc.SubmitOptions{})
		var re *groupconc.RejectedError
		require.ErrorAs(t, err, &re)
		cancel()
		<-waiting.done
		require.ErrorIs(t, waiting.err, context.Canceled)
		k.Release()
		quiesce(t, e, h)

		assert.Equal(t, "do-2", re.TaskID)
		assert.Equal(t, []string{evSubmitted, evRejected}, rec.Events("a", "do-2"), "the turned-away Do")
		assert.Equal(t, []string{evSubmitted, evCompleted}, rec.Events("a", "do-1"), "the Do whose caller left")
		r, ok := rec.Result("a", "do-1")
		require.True(t, ok)
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.Equal(t, "do-1", r.TaskID)
	})
}

// The listener hears a Do that ran as a task: its End is when fn returned.
func TestTheListenerHearsWhenADosFnReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		e := newExecutor(t, builder().TaskLifecycleListener(rec))
		_, err := groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) {
			time.Sleep(time.Second)
			return 1, nil
		}, groupconc.SubmitOptions{})
		require.NoError(t, err)
		r, ok := rec.Result("a", "do-1")
		require.True(t, ok, "OnCompleted")
		assert.Equal(t, groupconc.StatusSuccess, r.Status)
		assert.Equal(t, time.Second, r.Duration())
	})
}
