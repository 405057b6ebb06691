package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kobe/groupconc"
)

// From UpdatePolicy's return the pressure warnings are the new policy's,
// for the tasks already waiting too (see UpdatePolicy and
// PolicyBuilder.PressureWarnings).

// oneWaiting has a task of group key run, held by gate, and another wait
// behind it, from now.
func oneWaiting(t *testing.T, e *groupconc.GroupExecutor, key string, gate <-chan struct{}) {
	t.Helper()
	submit(t, context.Background(), e, key, "running", gated(gate, 0))
	submit(t, context.Background(), e, key, "waiting", gated(gate, 0))
}

// warningsOf returns the warnings w holds about the group key.
func warningsOf(w *warningLog, key string) []groupconc.PressureWarning {
	var out []groupconc.PressureWarning
	for _, pw := range w.all() {
		if pw.GroupKey == key {
			out = append(out, pw)
		}
	}
	return out
}

func TestUpdatePolicyThatAddsPressureWarningsWarnsAboutTasksAlreadyWaiting(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode)) // no warnings: no age timer
			gate := make(chan struct{})
			defer close(gate)
			oneWaiting(t, e, "a", gate) // waits from t=0
			time.Sleep(8 * time.Second) // fake clock
			oneWaiting(t, e, "b", gate) // waits from t=8s
			time.Sleep(2 * time.Second) // fake clock: t=10s

			w := new(warningLog)
			require.NoError(t, e.UpdatePolicy(mustBuild(t, builder().Isolation(mode).
				PressureWarnings(groupconc.PressureConfig{BacklogAge: 4 * time.Second}, w.add))))
			synctest.Wait()
			a := warningsOf(w, "a")
			require.Len(t, a, 1, "a's task had waited past the new age: warned at once")
			assert.Equal(t, groupconc.TriggerBacklogAge, a[0].Trigger)
			assert.Equal(t, 10*time.Second, a[0].OldestWait)
			assert.Empty(t, warningsOf(w, "b"), "b's task has waited 2s of 4s")

			time.Sleep(2*time.Second - time.Nanosecond) // fake clock
			synctest.Wait()
			assert.Empty(t, warningsOf(w, "b"), "b's task has not waited 4s")
			time.Sleep(time.Nanosecond) // fake clock: t=12s, b's task reaches the age
			synctest.Wait()
			b := warningsOf(w, "b")
			require.Len(t, b, 1, "b's task waited the new age with nothing new submitted")
			assert.Equal(t, 4*time.Second, b[0].OldestWait)
		})
	})
}

func TestUpdatePolicyWithAShorterBacklogAgeBringsTheArmedAgeTimerForward(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			w := new(warningLog)
			policy := func(age time.Duration) *groupconc.GroupPolicy {
				return mustBuild(t, builder().Isolation(mode).
					PressureWarnings(groupconc.PressureConfig{BacklogAge: age}, w.add))
			}
			e := newExecutor(t, builder().Isolation(mode).
				PressureWarnings(groupconc.PressureConfig{BacklogAge: time.Hour}, w.add))
			gate := make(chan struct{})
			defer close(gate)
			oneWaiting(t, e, "a", gate) // arms the timer for t=1h
			time.Sleep(time.Second)     // fake clock
			require.NoError(t, e.UpdatePolicy(policy(4*time.Second)))

			time.Sleep(3*time.Second - time.Nanosecond) // fake clock
			synctest.Wait()
			assert.Empty(t, w.all(), "a's task has not waited 4s")
			time.Sleep(time.Nanosecond) // fake clock: t=4s, a's task reaches the new age
			synctest.Wait()
			a := warningsOf(w, "a")
			require.Len(t, a, 1, "the timer armed for an hour was brought forward")
			assert.Equal(t, 4*time.Second, a[0].OldestWait)
		})
	})
}

func TestPressureWarnsWithin1point5TimesTheAgeAGroupThatBeganToWaitAfterUpdatePolicy(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			w := new(warningLog)
			e := newExecutor(t, builder().Isolation(mode).
				PressureWarnings(groupconc.PressureConfig{BacklogAge: time.Hour}, w.add))
			gate := make(chan struct{})
			defer close(gate)
			oneWaiting(t, e, "a", gate) // arms the timer for t=1h
			time.Sleep(time.Second)     // fake clock
			require.NoError(t, e.UpdatePolicy(mustBuild(t, builder().Isolation(mode).
				PressureWarnings(groupconc.PressureConfig{BacklogAge: 4 * time.Second}, w.add))))
			time.Sleep(1500 * time.Millisecond) // fake clock
			oneWaiting(t, e, "b", gate)         // waits from t=2.5s
			time.Sleep(6 * time.Second)         // fake clock: 1.5×age after b began
			synctest.Wait()
			b := warningsOf(w, "b")
			require.Len(t, b, 1, "b's task waited 1.5×BacklogAge with nothing new submitted")
			assert.GreaterOrEqual(t, b[0].OldestWait, 4*time.Second)
			assert.LessOrEqual(t, b[0].OldestWait, 6*time.Second)
		})
	})
}

func TestUpdatePolicyWhileTheAgeCheckRunsHasTheNextCheckArmedForTheNewAge(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			w := new(warningLog)
			hold, held := make(chan struct{}), make(chan struct{})
			var once sync.Once
			e := newExecutor(t, builder().Isolation(mode).
				PressureWarnings(groupconc.PressureConfig{BacklogAge: time.Hour}, func(pw groupconc.PressureWarning) {
					w.add(pw)
					once.Do(func() { close(held); <-hold }) // the check stays under way
				}))
			gate := make(chan struct{})
			defer close(gate)
			oneWaiting(t, e, "a", gate) // arms the timer for t=1h
			time.Sleep(time.Hour)       // fake clock: the check warns about a
			<-held
			require.NoError(t, e.UpdatePolicy(mustBuild(t, builder().Isolation(mode).
				PressureWarnings(groupconc.PressureConfig{BacklogAge: 10 * time.Minute}, w.add))))
			close(hold)                  // the check ends, and arms the timer again
			oneWaiting(t, e, "b", gate)  // waits from t=1h
			time.Sleep(15 * time.Minute) // fake clock: 1.5×the new age
			synctest.Wait()
			b := warningsOf(w, "b")
			require.NotEmpty(t, b, "the check under way at the update armed the next for the new age, not the old one")
			assert.GreaterOrEqual(t, b[0].OldestWait, 10*time.Minute)
			assert.LessOrEqual(t, b[0].OldestWait, 15*time.Minute)
		})
	})
}

func TestUpdatePolicyRacingWithTheAgeTimerAndShutdownLeavesNoCheckNorCallBehind(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for round := range 10 {
			synctest.Test(t, func(t *testing.T) {
				ignore := goleak.IgnoreCurrent()
				var l lateCalls
				policy := func(age time.Duration, warn bool) *groupconc.GroupPolicy {
					b := builder().Isolation(mode)
					if warn {
						b.PressureWarnings(groupconc.PressureConfig{BacklogAge: age, Cooldown: time.Millisecond}, func(groupconc.PressureWarning) {
							l.call(func() {})
						})
					}
					return mustBuild(t, b)
				}
				policies := []*groupconc.GroupPolicy{policy(time.Hour, true), policy(2*time.Millisecond, true), policy(0, false), policy(3*time.Millisecond, true)}
				e := groupconc.New(policies[0])
				gate := make(chan struct{})
				for i := range 8 {
					submit(t, context.Background(), e, fmt.Sprint("g", i%2), fmt.Sprint(i), gated(gate, i))
				}
				// The updates land on the instants the timer fires at: the
				// sleeping goroutine and the timer's check wake together.
				updated := make(chan error, 1)
				go func() {
					for i := 1; ; i++ {
						time.Sleep(time.Millisecond)
						if err := e.UpdatePolicy(policies[i%len(policies)]); err != nil {
							updated <- err
							return
						}
					}
				}()
				time.Sleep(time.Duration(20+round) * time.Millisecond)
				close(gate)
				require.NoError(t, e.Shutdown(context.Background()))
				l.returned.Store(true)
				require.True(t, errors.Is(<-updated, groupconc.ErrClosed), "UpdatePolicy after Shutdown")
				requireNoGoroutineLeft(t, ignore)
				time.Sleep(time.Hour) // any timer left would fire
				synctest.Wait()
				assert.NotZero(t, l.calls.Load(), "calls of the function")
				assert.Zero(t, l.lates.Load(), "calls that ran after Shutdown returned")
			})
		}
	})
}

// UpdatePolicy arms the age timer only for tasks that wait under a policy
// that watches: not with nothing waiting, nor for a policy that does not.
func TestUpdatePolicyArmsTheAgeTimerOnlyForWaitingTasksWatched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		watched := mustBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).
			PressureWarnings(groupconc.PressureConfig{BacklogAge: time.Minute}, func(groupconc.PressureWarning) {}))
		e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1))
		require.NoError(t, e.UpdatePolicy(watched))
		assert.False(t, groupconc.PressureArmed(e), "armed with nothing waiting")
		require.NoError(t, e.UpdatePolicy(mustBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1))))
		gate := make(chan struct{})
		hs := []*groupconc.TaskHandle[int]{
			submit(t, t.Context(), e, "a", "running", gated(gate, 0)),
			submit(t, t.Context(), e, "a", "waiting", gated(gate, 0)),
		}
		require.NoError(t, e.UpdatePolicy(e.Policy()))
		assert.False(t, groupconc.PressureArmed(e), "armed for a policy that does not watch")
		close(gate)
		quiesce(t, e, hs...)
	})
}
