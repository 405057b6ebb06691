package groupconc_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/internal/goroutines"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Waiting tasks are records in their line, not parked goroutines: the tests
// here pin what that promises.

// TestWaitingTasksHoldNoGoroutine: a thousand tasks waiting behind a busy
// group add no goroutine, even with a caller's context that can end.
func TestWaitingTasksHoldNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		defer e.Close()
		gate := make(chan struct{})
		first := submit(t, t.Context(), e, "g", "first", gated(gate, 0))
		synctest.Wait()
		var ran atomic.Int64
		hs := make([]*groupconc.TaskHandle[int], 1000)
		started, profile := goroutines.StartedBy(func() {
			for i := range hs {
				hs[i] = submit(t, t.Context(), e, "g", fmt.Sprint(i), func(context.Context) (int, error) {
					ran.Add(1)
					return i, nil
				})
			}
			synctest.Wait()
		})
		assert.Zero(t, started, "waiting tasks started goroutines:\n%s", profile)
		assert.Equal(t, 1000, e.Stats().Waiting)

		close(gate)
		first.Wait()
		for i, h := range hs {
			r := h.Wait()
			require.Equal(t, groupconc.StatusSuccess, r.Status)
			require.Equal(t, i, r.Value)
		}
		assert.EqualValues(t, 1000, ran.Load())
	})
}

// TestGoexitInAChainedTaskDoesNotStrandTheNext: a task run on the goroutine
// of the task before it may end that goroutine with runtime.Goexit; the
// tasks after it still run, in order.
func TestGoexitInAChainedTaskDoesNotStrandTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		defer e.Close()
		gate := make(chan struct{})
		var order []int
		hs := make([]*groupconc.TaskHandle[int], 6)
		for i := range hs {
			hs[i] = submit(t, t.Context(), e, "g", fmt.Sprint(i), func(context.Context) (int, error) {
				order = append(order, i) // limit 1: one task at a time
				switch i {
				case 0:
					<-gate
				case 1, 3, 4:
					runtime.Goexit()
				}
				return i, nil
			})
		}
		synctest.Wait()
		close(gate)
		want := []groupconc.TaskStatus{groupconc.StatusSuccess, groupconc.StatusFailed, groupconc.StatusSuccess,
			groupconc.StatusFailed, groupconc.StatusFailed, groupconc.StatusSuccess}
		for i, h := range hs {
			assert.Equal(t, want[i], h.Wait().Status, "task %d", i)
		}
		assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, order)
		require.NoError(t, e.Shutdown(t.Context()))
		assert.NoError(t, e.Quiescent())
	})
}

// TestListenerDoesNotChangeHowPermitsAreHandedOn: with a listener installed,
// as without one, the task waiting for a permit runs on the goroutine of the
// task that gave it back (no goroutine per hand-off), once the listener has
// heard that task complete, on that goroutine. So a slow listener holds up
// the task handed on to its goroutine, and no other: another group's task
// still starts.
func TestListenerDoesNotChangeHowPermitsAreHandedOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		listening := make(chan struct{})
		var firstOn, firstToldOn, secondOn string
		e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().TaskLifecycleListener(groupconc.ListenerFuncs{
			Completed: func(_, taskID string, _ groupconc.GroupResult[any]) {
				if taskID == "first" {
					firstToldOn = goroutineID()
					<-listening
				}
			},
		}))) // concurrency 1
		defer e.Close()
		gate := make(chan struct{})
		submit(t, t.Context(), e, "g", "first", func(context.Context) (int, error) {
			firstOn = goroutineID()
			<-gate
			return 1, nil
		})
		second := submit(t, t.Context(), e, "g", "second", func(context.Context) (int, error) {
			secondOn = goroutineID()
			return 2, nil
		})
		synctest.Wait()
		close(gate)
		synctest.Wait()
		assert.False(t, second.IsDone(), "the task handed the permit started before the listener returned")
		other := submit(t, t.Context(), e, "other", "other", func(context.Context) (int, error) { return 3, nil })
		assert.Equal(t, groupconc.StatusSuccess, other.Wait().Status, "another group's task waited for the listener")
		close(listening)
		assert.Equal(t, 2, second.Wait().Value)
		assert.Equal(t, firstOn, firstToldOn, "OnCompleted ran on the goroutine that ran the task")
		assert.Equal(t, firstOn, secondOn, "the permit was not handed on inline")
	})
}

// TestCallerContextEndsAWaitingTask: a waiting task whose caller's context
// ends leaves its line at once, and the task behind it moves up.
func TestCallerContextEndsAWaitingTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		defer e.Close()
		gate, open := make(chan struct{}), make(chan struct{})
		close(open)
		submit(t, t.Context(), e, "g", "busy", gated(gate, 0))
		ctx, cancel := context.WithCancel(t.Context())
		cancelled := submit(t, ctx, e, "g", "cancelled", gated(open, 1))
		next := submit(t, t.Context(), e, "g", "next", gated(open, 2))
		synctest.Wait()
		cancel()
		r := cancelled.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.ErrorIs(t, r.Err, context.Canceled)
		synctest.Wait()
		gs, _ := e.GroupStats("g")
		assert.Equal(t, 1, gs.Waiting, "only next waits")
		close(gate)
		assert.Equal(t, 2, next.Wait().Value)
	})
}

// TestResultTimesAreExact: Submitted, Start and End are the moments of
// submission, of holding every permit and of the end, to the nanosecond of
// the clock, for a task that waited and for one admitted at once.
func TestResultTimesAreExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		defer e.Close()
		// Every sleep here is on the bubble's fake clock.
		time.Sleep(time.Hour) // the executor's epoch is not the tasks' clock
		open := make(chan struct{})
		close(open)
		t0 := time.Now()
		first := submit(t, t.Context(), e, "g", "first", gatedWork(open, 2*time.Second, 0))
		time.Sleep(time.Second)
		t1 := time.Now()
		second := submit(t, t.Context(), e, "g", "second", gatedWork(open, 3*time.Second, 0))

		r1, r2 := first.Wait(), second.Wait()
		assert.True(t, r1.Submitted.Equal(t0), "first Submitted %v, want %v", r1.Submitted, t0)
		assert.True(t, r1.Start.Equal(t0), "first Start")
		assert.Equal(t, 2*time.Second, r1.Duration())
		assert.True(t, r2.Submitted.Equal(t1), "second Submitted %v, want %v", r2.Submitted, t1)
		assert.Equal(t, time.Second, r2.QueueWait(), "second waited for first")
		assert.Equal(t, 3*time.Second, r2.Duration())
		assert.True(t, r2.End.Equal(t0.Add(5*time.Second)), "second End")
		assert.Equal(t, t1.Format(time.RFC3339Nano), r2.Submitted.Format(time.RFC3339Nano), "wall clock")
	})
}

// TestTasksAdmittedInABurstAllRun: tasks admitted inside Submit wait in the
// ready queue for a goroutine of the executor, and goroutines are reused;
// one task that blocks never keeps the others from running.
func TestTasksAdmittedInABurstAllRun(t *testing.T) {
	for _, n := range []int{1, 2, 3, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(groupconc.Unlimited)))
				defer e.Close()
				gate := make(chan struct{})
				var running gauge
				hs := make([]*groupconc.TaskHandle[int], n)
				for i := range hs {
					hs[i] = submit(t, t.Context(), e, "g", fmt.Sprint(i), gated(gate, i, &running))
				}
				synctest.Wait()
				assert.EqualValues(t, n, running.cur.Load(), "tasks running at once")
				close(gate)
				for i, h := range hs {
					assert.Equal(t, i, h.Wait().Value)
				}
			})
		})
	}
}

// TestAdmittedTasksReuseGoroutines: a goroutine of the executor that has run
// a task admitted inside Submit takes the next ready one rather than ending,
// so a stream of short tasks does not cost a goroutine each. It counts the
// goroutines that ran a thousand trivial tasks, by the ID in their stack
// header: with a goroutine per task there would be a thousand.
func TestAdmittedTasksReuseGoroutines(t *testing.T) {
	e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(groupconc.Unlimited)))
	defer e.Close()
	const n = 1000
	ids := make([]string, n)
	hs := make([]*groupconc.TaskHandle[int], n)
	for i := range hs {
		hs[i] = submit(t, t.Context(), e, "g", fmt.Sprint(i), func(context.Context) (int, error) {
			ids[i] = goroutineID()
			return i, nil
		})
	}
	distinct := map[string]bool{}
	for i, h := range hs {
		require.Equal(t, i, h.Wait().Value)
		distinct[ids[i]] = true
	}
	assert.Less(t, len(distinct), n/2, "goroutines that ran %d trivial tasks", n)
}

// TestReadyTasksNeverWaitForRunningOnes: submitters racing each other, and
// goroutines of the executor going back to the ready queue between short
// tasks, never leave a ready task with no goroutine bound to take it: once
// everything settles, every blocking task runs at once and every short one
// has finished. A task left in the queue would show as one missing in the
// gauge.
func TestReadyTasksNeverWaitForRunningOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(groupconc.Unlimited)))
		defer e.Close()
		const submitters, each = 4, 200 // every tenth task blocks
		gate := make(chan struct{})
		var running gauge
		hs := make([][]*groupconc.TaskHandle[int], submitters)
		var wg sync.WaitGroup
		for s := range submitters {
			wg.Go(func() {
				for i := range each {
					task := groupconc.Task[int](func(context.Context) (int, error) { return i, nil })
					if i%10 == 0 {
						task = gated(gate, i, &running)
					}
					hs[s] = append(hs[s], submit(t, t.Context(), e, fmt.Sprint("g", s%2), fmt.Sprint(i), task))
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		assert.EqualValues(t, submitters*each/10, running.cur.Load(), "blocking tasks running at once")
		for _, hs := range hs {
			for i, h := range hs {
				if i%10 != 0 {
					assert.True(t, h.IsDone(), "short task %d finished while the others block", i)
				}
			}
		}
		close(gate)
		for _, hs := range hs {
			for i, h := range hs {
				assert.Equal(t, i, h.Wait().Value)
			}
		}
	})
}
