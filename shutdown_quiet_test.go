package groupconc_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kobe/groupconc"
)

// After Shutdown returns nothing of the executor runs: its goroutines have
// ended and the pressure warnings' function is neither running nor called
// again (see Shutdown and PolicyBuilder.PressureWarnings).

// requireNoGoroutineLeft runs goleak's check, right after Shutdown
// returned: every goroutine but those ignore names must have ended. A
// goroutine cannot be waited for past its last action, so goleak's own
// short retries (from 1 µs, fake time inside a bubble) tolerate one in the
// instructions that follow; nothing else may be there, none blocked and
// none running a task, a listener or the pressure function.
func requireNoGoroutineLeft(t *testing.T, ignore goleak.Option) {
	t.Helper()
	require.NoError(t, goleak.Find(ignore), "goroutines left once Shutdown returned")
}

// lateCalls counts the calls of a pressure warnings' function, and those
// that ran, even in part, after Shutdown or Close returned.
type lateCalls struct {
	returned     atomic.Bool // set by the test once Shutdown or Close returned
	calls, lates atomic.Int32
}

// call is the body of the function: it counts the call, runs body, and
// records whether the call ended after Shutdown or Close returned.
func (l *lateCalls) call(body func()) {
	l.calls.Add(1)
	if l.returned.Load() {
		l.lates.Add(1)
		return
	}
	body()
	if l.returned.Load() {
		l.lates.Add(1)
	}
}

func TestShutdownWaitsForAPressureWarningUnderWayAndNoneComesAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ignore := goleak.IgnoreCurrent()
		var l lateCalls
		e := groupconc.New(mustBuild(t, builder().
			PressureWarnings(groupconc.PressureConfig{BacklogAge: time.Second}, func(groupconc.PressureWarning) {
				l.call(func() { time.Sleep(time.Minute) }) // still under way when Shutdown is called
			})))
		gate := make(chan struct{})
		submit(t, context.Background(), e, "a", "running", gated(gate, 0))
		submit(t, context.Background(), e, "a", "waiting", gated(gate, 0))
		time.Sleep(time.Second) // the age timer fires: the function starts its minute
		synctest.Wait()
		require.EqualValues(t, 1, l.calls.Load(), "the waiting task's age is due")
		close(gate) // both tasks end at once, well before the function

		start := time.Now()
		require.NoError(t, e.Shutdown(context.Background()))
		took := time.Since(start) // before goleak, whose retries sleep on the fake clock
		l.returned.Store(true)
		requireNoGoroutineLeft(t, ignore)
		assert.Equal(t, time.Minute, took, "Shutdown waited for the function under way")

		time.Sleep(time.Hour) // any timer left would fire
		synctest.Wait()
		assert.EqualValues(t, 1, l.calls.Load(), "calls of the function")
		assert.Zero(t, l.lates.Load(), "calls that ran after Shutdown returned")
	})
}

func TestNoGoroutineOfABusyExecutorIsLeftWhenShutdownReturns(t *testing.T) {
	for mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		t.Run(groupconc.IsolationMode(mode).String(), func(t *testing.T) {
			for range 20 {
				synctest.Test(t, func(t *testing.T) {
					ignore := goleak.IgnoreCurrent()
					var l lateCalls
					e := groupconc.New(mustBuild(t, builder().
						Isolation(groupconc.IsolationMode(mode)).
						DefaultMaxConcurrencyPerGroup(2).GlobalMaxInFlight(8).
						PressureWarnings(groupconc.PressureConfig{BacklogCount: 4, BacklogAge: time.Millisecond}, func(groupconc.PressureWarning) {
							l.call(func() {})
						})))
					ctx, cancel := context.WithCancel(context.Background())
					gate := make(chan struct{})
					var hs []*groupconc.TaskHandle[int]
					for i := range 400 {
						task, c := gated(gate, i), context.Background()
						switch i % 4 {
						case 1:
							task = succeed
						case 2:
							c = ctx // cancelled while it waits, or as it runs
						}
						hs = append(hs, submit(t, c, e, fmt.Sprint("g", i%16), fmt.Sprint(i), task))
					}
					time.Sleep(time.Millisecond) // the age timer fires
					cancel()
					hs[3].Cancel()
					close(gate)

					require.NoError(t, e.Shutdown(context.Background()))
					l.returned.Store(true)
					requireNoGoroutineLeft(t, ignore)
					for _, h := range hs {
						require.True(t, h.IsDone())
					}
					time.Sleep(time.Hour)
					synctest.Wait()
					assert.NotZero(t, l.calls.Load(), "calls of the function")
					assert.Zero(t, l.lates.Load(), "calls that ran after Shutdown returned")
				})
			}
		})
	}
}

func TestCloseCalledFromThePressureFunctionReturnsAndTheFunctionIsNotCalledAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l lateCalls
		var e *groupconc.GroupExecutor
		closed := make(chan error, 1)
		e = groupconc.New(mustBuild(t, builder().
			PressureWarnings(groupconc.PressureConfig{BacklogAge: time.Second, Cooldown: time.Millisecond}, func(groupconc.PressureWarning) {
				l.call(func() { closed <- e.Close() })
				l.returned.Store(true)
			})))
		gate := make(chan struct{})
		running := submit(t, context.Background(), e, "a", "running", gated(gate, 0))
		waiting := submit(t, context.Background(), e, "a", "waiting", gated(gate, 0))
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case err := <-closed:
			require.NoError(t, err)
		default:
			t.Fatal("Close, called from the pressure function, did not return")
		}
		assert.Equal(t, groupconc.StatusCancelled, waiting.Wait().Status, "the waiting task")
		close(gate) // the running task ignores its context
		running.Wait()

		time.Sleep(time.Hour)
		synctest.Wait()
		assert.EqualValues(t, 1, l.calls.Load(), "calls of the function")
		assert.Zero(t, l.lates.Load(), "calls that began after Close returned")
	})
}

func TestShutdownStartedFromThePressureFunctionWaitsForTheTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e *groupconc.GroupExecutor
		shut := make(chan error, 1)
		e = groupconc.New(mustBuild(t, builder().
			PressureWarnings(groupconc.PressureConfig{BacklogAge: time.Second}, func(groupconc.PressureWarning) {
				go func() { shut <- e.Shutdown(context.Background()) }() // as Shutdown's doc says
			})))
		gate := make(chan struct{})
		running := submit(t, context.Background(), e, "a", "running", gated(gate, 0))
		waiting := submit(t, context.Background(), e, "a", "waiting", gated(gate, 0))
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-shut:
			t.Fatal("Shutdown, started from the pressure function, returned before the tasks ended")
		default:
		}
		close(gate)
		synctest.Wait()
		select {
		case err := <-shut:
			require.NoError(t, err)
		default:
			t.Fatal("Shutdown, started from the pressure function, did not return once the tasks ended")
		}
		assert.Equal(t, groupconc.StatusSuccess, running.Wait().Status)
		assert.Equal(t, groupconc.StatusSuccess, waiting.Wait().Status)
	})
}

func TestShutdownCalledInThePressureFunctionWaitsForItUntilItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e *groupconc.GroupExecutor
		shut := make(chan error, 1)
		e = groupconc.New(mustBuild(t, builder().
			PressureWarnings(groupconc.PressureConfig{BacklogAge: time.Second}, func(groupconc.PressureWarning) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				shut <- e.Shutdown(ctx) // waits for this very call: misuse, bounded by ctx
			})))
		gate := make(chan struct{})
		submit(t, context.Background(), e, "a", "running", gated(gate, 0))
		submit(t, context.Background(), e, "a", "waiting", gated(gate, 0))
		time.Sleep(time.Second)
		synctest.Wait() // the function is in Shutdown, which waits for the tasks
		close(gate)
		start := time.Now()
		err := <-shut
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Minute, time.Since(start), "Shutdown waited until its context ended")
	})
}

func TestShutdownDoesNotWaitForAnArmedAgeTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l lateCalls
		e := groupconc.New(mustBuild(t, builder().
			PressureWarnings(groupconc.PressureConfig{BacklogAge: time.Hour}, func(groupconc.PressureWarning) {
				l.call(func() {})
			})))
		gate := make(chan struct{})
		submit(t, context.Background(), e, "a", "running", gated(gate, 0))
		submit(t, context.Background(), e, "a", "waiting", gated(gate, 0)) // arms the timer for an hour
		close(gate)
		start := time.Now()
		require.NoError(t, e.Shutdown(context.Background()))
		l.returned.Store(true)
		assert.Zero(t, time.Since(start), "Shutdown waited for the timer")
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		assert.Zero(t, l.calls.Load(), "calls of the function")
	})
}

// Shutdown waits for every call of the pressure function under way, not
// only the first to return: two callers' Submits are each in a call.
func TestShutdownWaitsForTheLastPressureWarningUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l lateCalls
		release := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
		e := groupconc.New(mustBuild(t, builder().DefaultMaxConcurrencyPerGroup(1).
			PressureWarnings(groupconc.PressureConfig{BacklogCount: 1, BacklogAge: time.Hour}, func(w groupconc.PressureWarning) {
				l.call(func() { <-release[w.GroupKey] })
			})))
		gate := make(chan struct{})
		for _, key := range []string{"a", "b"} {
			submit(t, context.Background(), e, key, "running", gated(gate, 0))
			go func() { // Submit returns once its warning does
				_, _ = groupconc.Submit(context.Background(), e, key, "waiting", gated(gate, 0))
			}()
		}
		synctest.Wait()
		require.EqualValues(t, 2, l.calls.Load(), "a warning for each group, under way")
		close(gate)
		shut := make(chan error, 1)
		go func() { shut <- e.Shutdown(context.Background()) }()
		close(release["a"])
		synctest.Wait()
		select {
		case <-shut:
			t.Fatal("Shutdown returned while b's warning was under way")
		default:
		}
		close(release["b"])
		require.NoError(t, <-shut)
		l.returned.Store(true)
		assert.Zero(t, l.lates.Load(), "calls that ran after Shutdown returned")
	})
}
