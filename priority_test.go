package groupconc_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// startLog records the order tasks start in.
type startLog struct {
	mu  sync.Mutex
	ids []string
}

func (l *startLog) task(id string) groupconc.Task[int] {
	return func(context.Context) (int, error) {
		l.mu.Lock()
		l.ids = append(l.ids, id)
		l.mu.Unlock()
		return 1, nil
	}
}

func (l *startLog) order() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.ids...)
}

func submitPrio(t *testing.T, e *groupconc.GroupExecutor, key, id string, p groupconc.Priority, fn groupconc.Task[int]) *groupconc.TaskHandle[int] {
	t.Helper()
	h, err := groupconc.SubmitWith(t.Context(), e, key, id, fn, groupconc.SubmitOptions{Priority: p})
	require.NoError(t, err)
	return h
}

func TestPriorityStringNamesEachLevel(t *testing.T) {
	for p, want := range map[groupconc.Priority]string{
		groupconc.PriorityHighest: "highest", groupconc.PriorityHigh: "high", groupconc.PriorityNormal: "normal",
		groupconc.PriorityLow: "low", groupconc.PriorityLowest: "lowest", 0: "normal", 9: "Priority(9)",
	} {
		assert.Equal(t, want, p.String())
	}
}

func TestSubmitWithRejectsAPriorityOutOfRange(t *testing.T) {
	e := groupconc.New(nil)
	defer e.Close()
	_, err := groupconc.SubmitWith(t.Context(), e, "a", "1", succeed, groupconc.SubmitOptions{Priority: 6})
	require.ErrorIs(t, err, groupconc.ErrInvalidTask)
	assert.Contains(t, err.Error(), "Priority")
	_, err = groupconc.SubmitWith(t.Context(), e, "a", "1", succeed, groupconc.SubmitOptions{MaxWait: -1})
	require.ErrorIs(t, err, groupconc.ErrInvalidTask)
	assert.Contains(t, err.Error(), "MaxWait")
}

func TestAHighTaskStartsBeforeAThousandLowOnes(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode))
			k := newGatedTask(t, 0)
			hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "a", "run", k.Fn)}
			var log startLog
			for i := range 1000 {
				hs = append(hs, submitPrio(t, e, "a", fmt.Sprint("low", i), groupconc.PriorityLow, log.task("low")))
			}
			hs = append(hs, submitPrio(t, e, "a", "high", groupconc.PriorityHigh, log.task("high")))
			k.Release()
			quiesce(t, e, hs...)
			require.Len(t, log.order(), 1001)
			assert.Equal(t, "high", log.order()[0])
		})
	})
}

func TestTasksOfAGroupStartByPriorityThenSubmission(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode))
			k := newGatedTask(t, 0)
			hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "a", "run", k.Fn)}
			var log startLog
			prios := []groupconc.Priority{3, 5, 1, 3, 2, 4, 1, 5, 0, 2, 4, 3}
			for i, p := range prios {
				hs = append(hs, submitPrio(t, e, "a", fmt.Sprint(i), p, log.task(fmt.Sprintf("%d/%d", rank(p), i))))
			}
			synctest.Wait()
			k.Release()
			quiesce(t, e, hs...)
			want := []string{"1/2", "1/6", "2/4", "2/9", "3/0", "3/3", "3/8", "3/11", "4/5", "4/10", "5/1", "5/7"}
			assert.Equal(t, want, log.order())
		})
	})
}

func TestTheGlobalLineServesByPriorityUnderIsolationOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().GlobalMaxInFlight(1))
		k := newGatedTask(t, 0)
		hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "x", "run", k.Fn)}
		var log startLog
		for i, p := range []groupconc.Priority{groupconc.PriorityLowest, groupconc.PriorityNormal, groupconc.PriorityHighest, groupconc.PriorityNormal} {
			key := fmt.Sprint("g", i)
			hs = append(hs, submitPrio(t, e, key, "t", p, log.task(key)))
		}
		k.Release()
		quiesce(t, e, hs...)
		assert.Equal(t, []string{"g2", "g1", "g3", "g0"}, log.order())
	})
}

func TestFairShareChoosesTheGroupBeforeThePriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// a runs one task and b none: the freed permit goes to b, whose
		// task is of the lowest priority, before a's highest one.
		e := newExecutor(t, builder().Isolation(groupconc.IsolationFairShare).GlobalMaxInFlight(2).DefaultMaxConcurrencyPerGroup(4))
		ka, kx := newGatedTask(t, 0), newGatedTask(t, 0)
		hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "a", "run", ka.Fn), submit(t, t.Context(), e, "x", "run", kx.Fn)}
		var log startLog
		hs = append(hs, submitPrio(t, e, "a", "n", groupconc.PriorityNormal, log.task("a-normal")))
		hs = append(hs, submitPrio(t, e, "b", "lowest", groupconc.PriorityLowest, log.task("b-lowest")))
		hs = append(hs, submitPrio(t, e, "a", "h", groupconc.PriorityHighest, log.task("a-highest")))
		synctest.Wait()
		kx.Release()
		synctest.Wait()
		assert.Equal(t, []string{"b-lowest", "a-highest", "a-normal"}, log.order())
		ka.Release()
		quiesce(t, e, hs...)
	})
}

func TestOldestWaitSeesAnOldLowTaskBehindNewHighOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		k := newGatedTask(t, 0)
		hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "a", "run", k.Fn)}
		hs = append(hs, submitPrio(t, e, "a", "low", groupconc.PriorityLow, succeed))
		time.Sleep(5 * time.Second)
		hs = append(hs, submitPrio(t, e, "a", "high", groupconc.PriorityHigh, succeed))
		time.Sleep(time.Second)
		gs, _ := e.GroupStats("a")
		assert.Equal(t, 6*time.Second, gs.OldestWait)
		k.Release()
		quiesce(t, e, hs...)
	})
}

// rank is p as a number, 1 for the highest; the zero Priority is normal.
func rank(p groupconc.Priority) int {
	if p == 0 {
		return int(groupconc.PriorityNormal)
	}
	return int(p)
}

// modeBuilder is a builder for mode; under fair share with a global cap,
// which is where the fair line serves.
func modeBuilder(mode groupconc.IsolationMode) *groupconc.PolicyBuilder {
	b := builder().Isolation(mode)
	if mode == groupconc.IsolationFairShare {
		b.GlobalMaxInFlight(8)
	}
	return b
}
