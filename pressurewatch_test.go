package groupconc_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

func TestAWatcherIsWarnedAboutAnOldBacklogWhenThePolicyHasNoFunction(t *testing.T) {
	for _, c := range []struct {
		name string
		b    *groupconc.PolicyBuilder
		age  time.Duration
	}{
		{"no pressure settings: the defaults", builder(), 5 * time.Second},
		{"the policy's config, no function", builder().PressureWarnings(groupconc.PressureConfig{BacklogAge: time.Second}, nil), time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := groupconc.New(mustBuild(t, c.b))
				defer e.Close()
				gate := make(chan struct{})
				defer close(gate)
				start := time.Now()
				submit(t, context.Background(), e, "a", "running", gated(gate, 0))
				submit(t, context.Background(), e, "a", "waiting", gated(gate, 0)) // no watcher yet: no timer
				w := new(warningLog)
				stop := e.WatchPressure(w.add) // arms the timer for the task that waits already
				defer stop()
				time.Sleep(c.age - time.Nanosecond)
				synctest.Wait()
				assert.Empty(t, w.all(), "before the age")
				time.Sleep(time.Nanosecond)
				synctest.Wait()
				got := w.all()
				require.Len(t, got, 1)
				assert.Equal(t, groupconc.TriggerBacklogAge, got[0].Trigger)
				assert.Equal(t, c.age, got[0].OldestWait)
				assert.Equal(t, start.Add(c.age), got[0].At)
			})
		})
	}
}

func TestThePolicyFunctionAndEveryWatcherAreToldTheSameWarningsInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var order []string
		tell := func(name string, log *warningLog) func(groupconc.PressureWarning) {
			return func(pw groupconc.PressureWarning) {
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				log.add(pw)
			}
		}
		var policy, w1, w2 warningLog
		e := groupconc.New(mustBuild(t, builder().
			PressureWarnings(groupconc.PressureConfig{BacklogCount: 2, BacklogAge: time.Hour}, tell("policy", &policy))))
		defer e.Close()
		defer e.WatchPressure(tell("w1", &w1))()
		defer e.WatchPressure(tell("w2", &w2))()
		gate := make(chan struct{})
		defer close(gate)
		for i := range 4 { // 3 waiting: the count is crossed twice, the cooldown holds back the second
			submit(t, context.Background(), e, "a", fmt.Sprint(i), gated(gate, 0))
		}
		assert.Equal(t, []string{"policy", "w1", "w2"}, order)
		require.Len(t, policy.all(), 1)
		assert.Equal(t, policy.all(), w1.all())
		assert.Equal(t, policy.all(), w2.all())
		assert.Equal(t, 2, w1.all()[0].Waiting)
	})
}

func TestAStoppedWatcherIsNotToldAgainAndTheOthersStillAre(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(mustBuild(t, builder().
			PressureWarnings(groupconc.PressureConfig{BacklogCount: 1, BacklogAge: time.Hour, Cooldown: time.Second}, nil)))
		defer e.Close()
		var kept, stopped warningLog
		defer e.WatchPressure(kept.add)()
		stop := e.WatchPressure(stopped.add)
		gate := make(chan struct{})
		defer close(gate)
		submit(t, context.Background(), e, "a", "running", gated(gate, 0))
		submit(t, context.Background(), e, "a", "w1", gated(gate, 0))
		require.Len(t, stopped.all(), 1)
		stop()
		stop() // a second call does nothing
		time.Sleep(time.Second)
		submit(t, context.Background(), e, "a", "w2", gated(gate, 0))
		assert.Len(t, kept.all(), 2, "the watcher left in place")
		assert.Len(t, stopped.all(), 1, "the stopped watcher")
	})
}

// A warning on its way to the watchers read their list before stop came.
// A watcher stopped meanwhile is still not told it. Here the first watcher
// stops the second, so the stop falls between the read and the call.
func TestAWatcherStoppedAsAWarningIsOnItsWayIsNotToldIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(mustBuild(t, builder().
			PressureWarnings(groupconc.PressureConfig{BacklogCount: 1, BacklogAge: time.Hour}, nil)))
		defer e.Close()
		var first, second warningLog
		var stopSecond func()
		defer e.WatchPressure(func(pw groupconc.PressureWarning) {
			first.add(pw)
			stopSecond()
		})()
		stopSecond = e.WatchPressure(second.add)
		gate := make(chan struct{})
		defer close(gate)
		submit(t, context.Background(), e, "a", "running", gated(gate, 0))
		submit(t, context.Background(), e, "a", "waiting", gated(gate, 0))
		assert.Len(t, first.all(), 1)
		assert.Empty(t, second.all(), "stopped after the list was read")
	})
}

func TestWatchersRunOnTheSubmittingGoroutineWithNoLockHeldAndAPanicIsContained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(mustBuild(t, builder().
			PressureWarnings(groupconc.PressureConfig{BacklogCount: 1, BacklogAge: time.Hour}, nil)))
		defer e.Close()
		var inside atomic.Bool // set on the goroutine that calls Submit, read after it returns
		var stats groupconc.ExecutorStats
		var second warningLog
		defer e.WatchPressure(func(groupconc.PressureWarning) {
			inside.Store(true)
			stats = e.Stats()                                     // no lock of e is held
			e.WatchPressure(func(groupconc.PressureWarning) {})() // nor the watchers' lock
			panic("watcher")
		})()
		defer e.WatchPressure(second.add)()
		gate := make(chan struct{})
		defer close(gate)
		submit(t, context.Background(), e, "a", "running", gated(gate, 0))
		submit(t, context.Background(), e, "a", "waiting", gated(gate, 0))
		assert.True(t, inside.Load(), "the count trigger is told inside Submit")
		assert.Equal(t, 1, stats.Waiting)
		assert.Len(t, second.all(), 1, "the watcher after the one that panicked")
	})
}

func TestANilWatcherAndANilExecutorWatchNothing(t *testing.T) {
	e := groupconc.New(nil)
	defer e.Close()
	stop := e.WatchPressure(nil)
	require.NotNil(t, stop)
	stop()
	var nilExec *groupconc.GroupExecutor
	stop = nilExec.WatchPressure(func(groupconc.PressureWarning) { t.Error("called") })
	require.NotNil(t, stop)
	stop()
}

func TestShutdownWaitsForAWatcherUnderWayAndCloseDoesNot(t *testing.T) {
	for _, closeIt := range []bool{false, true} {
		t.Run(fmt.Sprint("close=", closeIt), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var l lateCalls
				e := groupconc.New(mustBuild(t, builder().
					PressureWarnings(groupconc.PressureConfig{BacklogAge: time.Second}, nil)))
				e.WatchPressure(func(groupconc.PressureWarning) {
					l.call(func() { time.Sleep(time.Minute) })
				})
				gate := make(chan struct{})
				submit(t, context.Background(), e, "a", "running", gated(gate, 0))
				submit(t, context.Background(), e, "a", "waiting", gated(gate, 0))
				time.Sleep(time.Second) // the age timer fires: the watcher starts its minute
				synctest.Wait()
				require.EqualValues(t, 1, l.calls.Load())
				close(gate)
				start := time.Now()
				if closeIt {
					require.NoError(t, e.Close())
					assert.Zero(t, time.Since(start), "Close waited for the watcher")
				} else {
					require.NoError(t, e.Shutdown(context.Background()))
					assert.Equal(t, time.Minute, time.Since(start), "Shutdown waited for the watcher")
					l.returned.Store(true)
				}
				time.Sleep(time.Hour)
				synctest.Wait()
				assert.EqualValues(t, 1, l.calls.Load(), "calls of the watcher")
				assert.Zero(t, l.lates.Load(), "calls that ran after Shutdown returned")
			})
		})
	}
}

func TestWatchingAndStoppingRaceWithWarnings(t *testing.T) {
	e := groupconc.New(mustBuild(t, builder().
		PressureWarnings(groupconc.PressureConfig{BacklogCount: 1, BacklogAge: time.Millisecond, Cooldown: time.Nanosecond}, nil)))
	defer e.Close()
	gate := make(chan struct{})
	for g := range 4 {
		submit(t, context.Background(), e, fmt.Sprint(g), "running", gated(gate, 0))
	}
	var told atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				stop := e.WatchPressure(func(groupconc.PressureWarning) { told.Add(1) })
				submit(t, context.Background(), e, fmt.Sprint(w), fmt.Sprint(i), succeed)
				stop()
			}
		})
	}
	wg.Wait()
	close(gate)
	require.NoError(t, e.Shutdown(context.Background()))
	assert.NotZero(t, told.Load(), "warnings told")
}
