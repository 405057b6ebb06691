package groupconc_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A pressure function that does not return (runtime.Goexit, as t.FailNow
// does) on an age warning leaves the warnings by age on, for every group.
func TestAgeWarningsSurviveAGoexitInThePressureFunction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var warned []string
		e := groupconc.New(mustBuild(t, builder().DefaultMaxConcurrencyPerGroup(1).
			PressureWarnings(groupconc.PressureConfig{BacklogCount: 1000, BacklogAge: time.Second}, func(w groupconc.PressureWarning) {
				mu.Lock()
				warned = append(warned, w.GroupKey)
				mu.Unlock()
				if w.GroupKey == "a" {
					runtime.Goexit()
				}
			})))
		holdA, waitA := newGatedTask(t, 1), newGatedTask(t, 2)
		ha := submitGated(t, e, "a", "", holdA, groupconc.SubmitOptions{})
		hwa := submitGated(t, e, "a", "", waitA, groupconc.SubmitOptions{})
		time.Sleep(1100 * time.Millisecond) // fake clock
		mu.Lock()
		require.Equal(t, []string{"a"}, warned)
		mu.Unlock()
		holdA.Release()
		waitA.Release()
		ha.Wait()
		hwa.Wait()

		holdB, waitB := newGatedTask(t, 3), newGatedTask(t, 4)
		hb := submitGated(t, e, "b", "", holdB, groupconc.SubmitOptions{})
		hwb := submitGated(t, e, "b", "", waitB, groupconc.SubmitOptions{})
		time.Sleep(1500 * time.Millisecond) // fake clock: 1.5×BacklogAge
		mu.Lock()
		assert.Contains(t, warned, "b", "b's task waited 1.5×BacklogAge unwarned")
		mu.Unlock()
		holdB.Release()
		waitB.Release()
		hb.Wait()
		hwb.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(t, e.Shutdown(ctx))
	})
}

// Nor does one that does not return on a count warning keep the task that
// began to wait from being warned about by age.
func TestACountWarningsGoexitLeavesTheAgeWarningArmed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var warned []groupconc.PressureTrigger
		e := groupconc.New(mustBuild(t, builder().DefaultMaxConcurrencyPerGroup(1).
			PressureWarnings(groupconc.PressureConfig{BacklogCount: 1, BacklogAge: time.Second, Cooldown: time.Millisecond}, func(w groupconc.PressureWarning) {
				mu.Lock()
				warned = append(warned, w.Trigger)
				mu.Unlock()
				if w.Trigger == groupconc.TriggerBacklogCount {
					runtime.Goexit()
				}
			})))
		hold, w := newGatedTask(t, 1), newGatedTask(t, 2)
		hh := submitGated(t, e, "a", "", hold, groupconc.SubmitOptions{})
		go func() { _, _ = groupconc.Submit(context.Background(), e, "a", "w", w.Fn) }() // its Submit does not return
		time.Sleep(1500 * time.Millisecond)                                              // fake clock
		mu.Lock()
		assert.Contains(t, warned, groupconc.TriggerBacklogAge, "warnings %v", warned)
		mu.Unlock()
		hold.Release()
		w.Release()
		hh.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		assert.NoError(t, e.Shutdown(ctx))
	})
}
