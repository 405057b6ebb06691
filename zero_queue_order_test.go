package groupconc_test

// Callers blocked on a queue of no slots are let in one at a time, in the
// order they came, also when permits come free together: tasks ending in
// one instant, or an adaptive limit raised as a task ends. Their tasks are
// accepted (OnSubmitted) in that order; tasks that then run side by side
// may start in any order.

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// acceptLog is a listener that logs the IDs of the callers' tasks ("c…")
// as they are accepted.
type acceptLog struct {
	mu  sync.Mutex
	ids []string // guarded by mu
}

func (l *acceptLog) listener() groupconc.TaskLifecycleListener {
	return groupconc.ListenerFuncs{Submitted: func(_, id string) {
		if strings.HasPrefix(id, "c") {
			l.mu.Lock()
			l.ids = append(l.ids, id)
			l.mu.Unlock()
		}
	}}
}

// blockThree blocks three callers c1, c2, c3 of group "a", in that order.
func blockThree(t *testing.T, e *groupconc.GroupExecutor) []*blocked {
	t.Helper()
	var cs []*blocked
	for _, id := range []string{"c1", "c2", "c3"} {
		cs = append(cs, submitBlocking(t.Context(), e, "a", id, succeed, groupconc.SubmitOptions{}))
		synctest.Wait()
		require.False(t, cs[len(cs)-1].returned(), "%s returned, want it blocked", id)
	}
	return cs
}

// requireInOrder waits for the callers' tasks and checks they were
// accepted in the callers' order.
func requireInOrder(t *testing.T, e *groupconc.GroupExecutor, cs []*blocked, log *acceptLog, hs ...*groupconc.TaskHandle[int]) {
	t.Helper()
	synctest.Wait()
	for i, c := range cs {
		require.True(t, c.returned(), "caller %d still blocked", i+1)
		require.NoError(t, c.err)
		hs = append(hs, c.h)
	}
	quiesce(t, e, hs...)
	log.mu.Lock()
	defer log.mu.Unlock()
	assert.Equal(t, []string{"c1", "c2", "c3"}, log.ids, "order of acceptance")
}

func TestCallersOnAQueueOfNoSlotsAreAcceptedInOrderWhenTasksEndTogether(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			var log acceptLog
			e := newExecutor(t, modeBuilder(mode).DefaultMaxConcurrencyPerGroup(2).DefaultQueueThresholdPerGroup(0).
				TaskLifecycleListener(log.listener()))
			k1, k2 := newGatedTask(t, 0), newGatedTask(t, 0)
			hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "a", "1", k1.Fn), submit(t, t.Context(), e, "a", "2", k2.Fn)}
			synctest.Wait()
			cs := blockThree(t, e)
			k1.Release()
			k2.Release()
			requireInOrder(t, e, cs, &log, hs...)
		})
	})
}

func TestCallersOnAQueueOfNoSlotsAreAcceptedInOrderWhenOtherGroupsGiveBackGlobalPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log acceptLog
		e := newExecutor(t, fairNoSlots(2).TaskLifecycleListener(log.listener()))
		k1, k2 := newGatedTask(t, 0), newGatedTask(t, 0)
		hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "x", "1", k1.Fn), submit(t, t.Context(), e, "y", "2", k2.Fn)}
		synctest.Wait()
		cs := blockThree(t, e)
		k1.Release()
		k2.Release()
		requireInOrder(t, e, cs, &log, hs...)
	})
}

func TestCallersOnAQueueOfNoSlotsAreAcceptedInOrderUnderAnAdaptiveLimitRaisedAsATaskEnds(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			var log acceptLog
			s := new(script)
			e := newExecutor(t, modeBuilder(mode).DefaultMaxConcurrencyPerGroup(4).DefaultQueueThresholdPerGroup(0).
				AdaptiveConcurrency(groupconc.AdaptiveConfig{New: s.new, Min: 1}).TaskLifecycleListener(log.listener()))
			k1, k2 := newGatedTask(t, 0), newGatedTask(t, 0)
			hs := []*groupconc.TaskHandle[int]{submit(t, t.Context(), e, "a", "1", k1.Fn), submit(t, t.Context(), e, "a", "2", k2.Fn)}
			synctest.Wait()
			s.want.Store(1)
			k1.Release() // the limit falls to 1, with one task running
			synctest.Wait()
			require.Equal(t, 1, groupStats(t, e, "a").MaxConcurrency)
			cs := blockThree(t, e)
			s.want.Store(4)
			k2.Release() // the limit rises to 4 as the last task ends
			requireInOrder(t, e, cs, &log, hs...)
		})
	})
}
