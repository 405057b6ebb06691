package groupconc_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// warningLog records pressure warnings.
type warningLog struct {
	mu   sync.Mutex
	list []groupconc.PressureWarning
}

func (w *warningLog) add(pw groupconc.PressureWarning) {
	w.mu.Lock()
	w.list = append(w.list, pw)
	w.mu.Unlock()
}

func (w *warningLog) all() []groupconc.PressureWarning {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]groupconc.PressureWarning(nil), w.list...)
}

// newWarningExecutor returns an executor of concurrency 1 per group that reports
// warnings under cfg, and a gate that holds every task it runs.
func newWarningExecutor(t *testing.T, cfg groupconc.PressureConfig) (*groupconc.GroupExecutor, *warningLog, chan struct{}) {
	t.Helper()
	w := new(warningLog)
	p, err := groupconc.NewPolicyBuilder().PressureWarnings(cfg, w.add).Build()
	require.NoError(t, err)
	e := groupconc.New(p)
	t.Cleanup(func() { e.Close() })
	return e, w, make(chan struct{})
}

func TestPressureWarnsWhenAGroupsBacklogReachesTheCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, w, gate := newWarningExecutor(t, groupconc.PressureConfig{BacklogCount: 3, BacklogAge: time.Hour})
		submit(t, context.Background(), e, "a", "running", gated(gate, 0))
		submit(t, context.Background(), e, "a", "w1", gated(gate, 0))
		submit(t, context.Background(), e, "a", "w2", gated(gate, 0))
		assert.Empty(t, w.all(), "2 waiting, below the count")
		submit(t, context.Background(), e, "a", "w3", gated(gate, 0))
		got := w.all()
		require.Len(t, got, 1)
		assert.Equal(t, "a", got[0].GroupKey)
		assert.Equal(t, groupconc.TriggerBacklogCount, got[0].Trigger)
		assert.Equal(t, 3, got[0].Waiting)
		assert.Zero(t, got[0].Suppressed)
		assert.Equal(t, time.Now(), got[0].At)
		close(gate)
	})
}

func TestPressureWarnsAboutAnOldBacklogExactlyWhenItReachesTheAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, w, gate := newWarningExecutor(t, groupconc.PressureConfig{BacklogAge: 4 * time.Second})
		start := time.Now()
		submit(t, context.Background(), e, "a", "running", gated(gate, 0))
		submit(t, context.Background(), e, "a", "waiting", gated(gate, 0))
		time.Sleep(4*time.Second - time.Nanosecond) // fake clock
		synctest.Wait()                             // whatever was due has run
		assert.Empty(t, w.all())
		time.Sleep(time.Nanosecond) // fake clock: the age is reached
		synctest.Wait()
		got := w.all()
		require.Len(t, got, 1)
		assert.Equal(t, groupconc.TriggerBacklogAge, got[0].Trigger)
		assert.Equal(t, 4*time.Second, got[0].OldestWait)
		assert.Equal(t, 1, got[0].Waiting)
		assert.Equal(t, start.Add(4*time.Second), got[0].At)
		gs, _ := e.GroupStats("a")
		assert.Equal(t, 4*time.Second, gs.OldestWait)
		close(gate)
	})
}

func TestPressureStillWarnsAboutAStuckGroupThatReceivesNothingNew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, w, gate := newWarningExecutor(t, groupconc.PressureConfig{BacklogAge: 4 * time.Second})
		submit(t, context.Background(), e, "a", "running", gated(gate, 0))
		submit(t, context.Background(), e, "a", "waiting", gated(gate, 0)) // arms the timer for t=4s
		time.Sleep(time.Second)                                            // fake clock
		submit(t, context.Background(), e, "b", "running", gated(gate, 0))
		submit(t, context.Background(), e, "b", "waiting", gated(gate, 0)) // waits from t=1s; the armed timer is a's
		time.Sleep(5 * time.Second)                                        // fake clock: to t=6s, 1.5×age after b began
		synctest.Wait()
		var b []groupconc.PressureWarning
		for _, pw := range w.all() {
			if pw.GroupKey == "b" {
				b = append(b, pw)
			}
		}
		require.Len(t, b, 1, "b's task waited 1.5×BacklogAge with nothing new submitted")
		assert.GreaterOrEqual(t, b[0].OldestWait, 4*time.Second)
		assert.LessOrEqual(t, b[0].OldestWait, 6*time.Second)
		close(gate)
	})
}

func TestPressureCooldownCountsTheTriggersItHoldsBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, w, gate := newWarningExecutor(t, groupconc.PressureConfig{BacklogCount: 1, BacklogAge: time.Hour, Cooldown: 10 * time.Second})
		submit(t, context.Background(), e, "a", "running", gated(gate, 0))
		submit(t, context.Background(), e, "a", "w1", gated(gate, 0)) // fires
		submit(t, context.Background(), e, "a", "w2", gated(gate, 0)) // held back
		submit(t, context.Background(), e, "a", "w3", gated(gate, 0)) // held back
		require.Len(t, w.all(), 1)
		time.Sleep(10 * time.Second) // fake clock: the cooldown passes
		submit(t, context.Background(), e, "a", "w4", gated(gate, 0))
		got := w.all()
		require.Len(t, got, 2)
		assert.Equal(t, 2, got[1].Suppressed)
		assert.Equal(t, 4, got[1].Waiting)
		submit(t, context.Background(), e, "b", "running", gated(gate, 0))
		submit(t, context.Background(), e, "b", "w1", gated(gate, 0))
		assert.Len(t, w.all(), 3, "the cooldown is per group")
		close(gate)
	})
}

func TestPressureCallbackPanicIsContained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		p, err := groupconc.NewPolicyBuilder().PressureWarnings(
			groupconc.PressureConfig{BacklogCount: 1, BacklogAge: time.Second, Cooldown: time.Nanosecond},
			func(groupconc.PressureWarning) { calls.Add(1); panic("boom") }).Build()
		require.NoError(t, err)
		e := groupconc.New(p)
		gate := make(chan struct{})
		var hs []*groupconc.TaskHandle[int]
		for i := range 3 {
			h, err := groupconc.Submit(context.Background(), e, "a", string(rune('a'+i)), func(context.Context) (int, error) { <-gate; return i, nil })
			require.NoError(t, err)
			hs = append(hs, h)
		}
		time.Sleep(2 * time.Second) // fake clock: the age check fires too
		synctest.Wait()             // and has returned
		close(gate)
		for _, h := range hs {
			assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status)
		}
		assert.GreaterOrEqual(t, calls.Load(), int32(3), "count triggers for 2 waiting tasks and at least one age check")
		require.NoError(t, e.Shutdown(context.Background()))
	})
}

func TestPressureTimerIsDisarmedOnceNothingWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, w, gate := newWarningExecutor(t, groupconc.PressureConfig{BacklogAge: time.Second})
		submit(t, context.Background(), e, "a", "running", gated(gate, 0))
		submit(t, context.Background(), e, "a", "waiting", gated(gate, 0))
		close(gate)
		synctest.Wait()
		time.Sleep(time.Hour) // fake clock: a timer still armed would keep firing
		synctest.Wait()
		assert.Empty(t, w.all(), "the backlog was gone before the age")
		assert.False(t, groupconc.PressureArmed(e), "armed with nothing waiting")
		require.NoError(t, e.Shutdown(context.Background()))
	})
}

// With no warning function and no watcher, nothing reads the ages: the
// timer is not armed, however long tasks wait.
func TestPressureTimerIsNotArmedWithNoOneWatching(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1))
		gate := make(chan struct{})
		hs := []*groupconc.TaskHandle[int]{
			submit(t, context.Background(), e, "a", "running", gated(gate, 0)),
			submit(t, context.Background(), e, "a", "waiting", gated(gate, 0)),
		}
		assert.False(t, groupconc.PressureArmed(e))
		close(gate)
		quiesce(t, e, hs...)
	})
}

func TestPressureConfigDefaultsAndValidation(t *testing.T) {
	_, err := groupconc.NewPolicyBuilder().PressureWarnings(
		groupconc.PressureConfig{BacklogCount: -1, BacklogAge: -time.Second, Cooldown: -1}, func(groupconc.PressureWarning) {}).Build()
	require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
	for _, field := range []string{"BacklogCount", "BacklogAge", "Cooldown"} {
		assert.ErrorContains(t, err, field)
	}
	assert.Equal(t, "backlog-count", groupconc.TriggerBacklogCount.String())
	assert.Equal(t, "backlog-age", groupconc.TriggerBacklogAge.String())
	assert.Equal(t, "PressureTrigger(0)", groupconc.PressureTrigger(0).String(), "the zero value is no trigger")
}
