package groupconc_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// eventLog is a listener that keeps, across all tasks, the order in which
// tasks were announced and started.
type eventLog struct {
	mu        sync.Mutex
	submitted []string // guarded by mu
	started   []string // guarded by mu
}

func (l *eventLog) listener() groupconc.ListenerFuncs {
	return groupconc.ListenerFuncs{
		Submitted: func(_, id string) { l.add(&l.submitted, id) },
		Started:   func(_, id string) { l.add(&l.started, id) },
	}
}

func (l *eventLog) add(to *[]string, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	*to = append(*to, id)
}

// order returns the IDs of evs that start with prefix, in order.
func (l *eventLog) order(evs *[]string, prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids []string
	for _, id := range *evs {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	return ids
}

// blockSix has six callers block on group "g", b0 to b5, one after the
// other, and checks that each waits.
func blockSix(t *testing.T, e *groupconc.GroupExecutor) ([]*blocked, []string) {
	t.Helper()
	var cs []*blocked
	var ids []string
	for i := range 6 {
		id := fmt.Sprintf("b%d", i)
		cs = append(cs, submitBlocking(t.Context(), e, "g", id, succeed, groupconc.SubmitOptions{}))
		ids = append(ids, id)
		synctest.Wait()
	}
	for _, c := range cs {
		require.False(t, c.returned())
	}
	require.Equal(t, 6, e.Stats().Blocked)
	return cs, ids
}

// checkAccepted checks that every caller got its handle and its task
// succeeded, and that the callers' tasks were announced and started in
// the order the callers blocked.
func checkAccepted(t *testing.T, log *eventLog, cs []*blocked, ids []string) {
	t.Helper()
	for _, c := range cs {
		<-c.done
		require.NoError(t, c.err)
		assert.Equal(t, groupconc.StatusSuccess, c.h.Wait().Status)
	}
	assert.Equal(t, ids, log.order(&log.submitted, "b"), "OnSubmitted order")
	assert.Equal(t, ids, log.order(&log.started, "b"), "OnStarted order")
}

func TestCallersHandedSlotsByARaisedThresholdStartInArrivalOrder(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			var log eventLog
			policy := func(threshold int) *groupconc.PolicyBuilder {
				return modeBuilder(mode).DefaultMaxConcurrencyPerGroup(1).
					DefaultQueueThresholdPerGroup(threshold).TaskLifecycleListener(log.listener())
			}
			e := newExecutor(t, policy(1))
			k := newGatedTask(t, 1)
			run := submit(t, t.Context(), e, "g", "run", k.Fn)
			wait := submit(t, t.Context(), e, "g", "wait", succeed)
			synctest.Wait()
			cs, ids := blockSix(t, e)
			require.NoError(t, e.UpdatePolicy(mustBuild(t, policy(7))))
			synctest.Wait()
			assert.Equal(t, 0, e.Stats().Blocked)
			k.Release()
			synctest.Wait()
			checkAccepted(t, &log, cs, ids)
			quiesce(t, e, run, wait)
		})
	})
}

func TestCallersHandedSlotsByTasksEndingTogetherStartInArrivalOrder(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			var log eventLog
			e := newExecutor(t, modeBuilder(mode).DefaultMaxConcurrencyPerGroup(3).
				DefaultQueueThresholdPerGroup(3).TaskLifecycleListener(log.listener()))
			// Three tasks run and end together, each handing its permit to
			// one of three waiting tasks, which hand their slots, from three
			// goroutines at once, to b0, b1 and b2.
			release := make(chan struct{})
			var hs []*groupconc.TaskHandle[int]
			for i := range 3 {
				hs = append(hs, submit(t, t.Context(), e, "g", fmt.Sprint("run", i), gated(release, i)))
			}
			var ws []*gatedTask
			for i := range 3 {
				ws = append(ws, newGatedTask(t, i))
				hs = append(hs, submit(t, t.Context(), e, "g", fmt.Sprint("wait", i), ws[i].Fn))
			}
			synctest.Wait()
			cs, ids := blockSix(t, e)
			close(release)
			synctest.Wait()
			assert.Equal(t, 3, e.Stats().Blocked, "three slots were freed")
			// One permit at a time comes free: the callers' tasks run one
			// after another, in the order they wait for it.
			for _, w := range ws {
				w.Release()
				synctest.Wait()
			}
			checkAccepted(t, &log, cs, ids)
			quiesce(t, e, hs...)
		})
	})
}

// A listener may block in OnSubmitted, or call into the executor, while
// the callers behind its task wait for their turn: they can still give up.
func TestCallersBehindABlockedAnnouncementCanStillGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hold := make(chan struct{})
		listener := groupconc.ListenerFuncs{Submitted: func(_, id string) {
			if id == "b0" {
				<-hold
			}
		}}
		policy := func(threshold int) *groupconc.PolicyBuilder {
			return builder().DefaultMaxConcurrencyPerGroup(1).
				DefaultQueueThresholdPerGroup(threshold).TaskLifecycleListener(listener)
		}
		e := newExecutor(t, policy(1))
		k := newGatedTask(t, 1)
		run := submit(t, t.Context(), e, "g", "run", k.Fn)
		wait := submit(t, t.Context(), e, "g", "wait", succeed)
		synctest.Wait()
		ctx, cancel := context.WithCancel(t.Context())
		b0 := submitBlocking(t.Context(), e, "g", "b0", succeed, groupconc.SubmitOptions{})
		synctest.Wait()
		b1 := submitBlocking(ctx, e, "g", "b1", succeed, groupconc.SubmitOptions{})
		synctest.Wait()
		require.NoError(t, e.UpdatePolicy(mustBuild(t, policy(7))))
		synctest.Wait()
		require.False(t, b0.returned(), "b0's announcement is held")
		cancel()
		synctest.Wait()
		require.True(t, b1.returned(), "b1 waits behind b0 but may give up")
		assert.ErrorIs(t, b1.err, context.Canceled)
		assert.Nil(t, b1.h)
		close(hold)
		<-b0.done
		require.NoError(t, b0.err)
		k.Release()
		quiesce(t, e, run, wait, b0.h)
	})
}

func TestAListenerClosingTheExecutorAsABlockedTaskIsAcceptedFreesTheCallersBehindIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e *groupconc.GroupExecutor
		closer := groupconc.ListenerFuncs{Submitted: func(_, id string) {
			if id == "b0" {
				_ = e.Close() // must not wait for b1, which waits for b0's turn to end
			}
		}}
		policy := func(threshold int) *groupconc.PolicyBuilder {
			return builder().DefaultMaxConcurrencyPerGroup(1).
				DefaultQueueThresholdPerGroup(threshold).TaskLifecycleListener(closer)
		}
		e = newExecutor(t, policy(1))
		k := newGatedTask(t, 1)
		run := submit(t, t.Context(), e, "g", "run", k.Fn)
		wait := submit(t, t.Context(), e, "g", "wait", succeed)
		synctest.Wait()
		b0 := submitBlocking(t.Context(), e, "g", "b0", succeed, groupconc.SubmitOptions{})
		synctest.Wait()
		b1 := submitBlocking(t.Context(), e, "g", "b1", succeed, groupconc.SubmitOptions{})
		synctest.Wait()
		require.NoError(t, e.UpdatePolicy(mustBuild(t, policy(7))))
		synctest.Wait()
		require.True(t, b0.returned())
		require.NoError(t, b0.err)
		assert.Equal(t, groupconc.StatusCancelled, b0.h.Wait().Status)
		require.True(t, b1.returned())
		assert.ErrorIs(t, b1.err, groupconc.ErrClosed)
		assert.Nil(t, b1.h)
		k.Release()
		run.Wait()
		wait.Wait()
	})
}
