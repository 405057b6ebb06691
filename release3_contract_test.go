package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

func TestRaisingABlockedQueueToUnlimitedAcceptsEveryBlockedCaller(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e, ks, hs := fullGroup(t, mode, nil)
			var cs []*blocked
			for _, id := range []string{"c1", "c2", "c3"} {
				cs = append(cs, submitBlocking(t.Context(), e, "a", id, succeed, groupconc.SubmitOptions{}))
				synctest.Wait()
			}
			b := builder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(groupconc.Unlimited).Isolation(mode)
			if mode == groupconc.IsolationFairShare {
				b.GlobalMaxInFlight(4)
			}
			require.NoError(t, e.UpdatePolicy(mustBuild(t, b)))
			synctest.Wait()
			for i, c := range cs {
				require.True(t, c.returned(), "caller %d still blocked on an Unlimited queue", i)
				require.NoError(t, c.err)
				hs = append(hs, c.h)
			}
			gs, _ := e.GroupStats("a")
			assert.Equal(t, 0, gs.Blocked)
			assert.Equal(t, 4, gs.Waiting)
			ks[0].Release()
			ks[1].Release()
			quiesce(t, e, hs...)
		})
	})
}

func TestLoweringAThresholdMakesBlockedCallersWaitLongerNeverFail(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e, ks, hs := fullGroup(t, mode, nil)
			var cs []*blocked
			for _, id := range []string{"c1", "c2"} {
				cs = append(cs, submitBlocking(t.Context(), e, "a", id, succeed, groupconc.SubmitOptions{}))
				synctest.Wait()
			}
			b := builder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).Isolation(mode)
			if mode == groupconc.IsolationFairShare {
				b.GlobalMaxInFlight(4)
			}
			require.NoError(t, e.UpdatePolicy(mustBuild(t, b)))
			synctest.Wait()
			for i, c := range cs {
				require.False(t, c.returned(), "caller %d returned (%v) after the threshold was lowered", i, c.err)
			}
			ks[0].Release()
			synctest.Wait()
			ks[1].Release()
			for i, c := range cs {
				<-c.done
				require.NoError(t, c.err, "caller %d", i)
				r := c.h.Wait()
				assert.Equal(t, groupconc.StatusSuccess, r.Status, "caller %d: %v", i, r.Err)
				hs = append(hs, c.h)
			}
			quiesce(t, e, hs...)
		})
	})
}

// TestAGroupWithOnlyABlockedCallerIsNotForgottenAsIdle: group "b" has no
// task, only a caller blocked on a queue that a full global cap keeps full.
func TestAGroupWithOnlyABlockedCallerIsNotForgottenAsIdle(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			b := builder().Isolation(mode).GlobalMaxInFlight(1).IdleGroupTTL(time.Second)
			if mode == groupconc.IsolationOff {
				b.GlobalQueueThreshold(0)
			} else {
				b.DefaultQueueThresholdPerGroup(0)
			}
			e := newExecutor(t, b)
			k := newGatedTask(t, 0)
			h := submit(t, t.Context(), e, "a", "run", k.Fn)
			synctest.Wait()
			c := submitBlocking(t.Context(), e, "b", "c", succeed, groupconc.SubmitOptions{})
			synctest.Wait()
			require.False(t, c.returned())
			time.Sleep(5 * time.Second) // fake clock: well past 2×TTL
			e.Stats()
			_, _ = groupconc.Submit(t.Context(), e, "z", "z", succeed)
			gs, ok := e.GroupStats("b")
			require.True(t, ok, "group b, with a blocked caller, was forgotten as idle")
			assert.Equal(t, 1, gs.Blocked)
			assert.Equal(t, 0, gs.Waiting)
			assert.Equal(t, 1, e.Stats().Blocked)
			k.Release()
			<-c.done
			require.NoError(t, c.err)
			quiesce(t, e, h, c.h)
		})
	})
}

func TestDiscardOldestWithThresholdZeroRejectsAsDiscardAndPreemptsNothing(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e := newExecutor(t, modeBuilder(mode).RejectionPolicy(groupconc.RejectDiscardOldest).
				DefaultQueueThresholdPerGroup(0).TaskLifecycleListener(rec))
			k := newGatedTask(t, 0)
			run := submit(t, t.Context(), e, "a", "run", k.Fn)
			synctest.Wait()
			n := submitPrio(t, e, "a", "n", groupconc.PriorityHighest, succeed)
			r, err := n.Await(t.Context())
			assert.Equal(t, groupconc.StatusRejected, r.Status)
			assert.NoError(t, err, "rejected as under RejectDiscard")
			assert.Equal(t, groupconc.ReasonGroupQueueFull, rec.Reason("a", "n"))
			assert.False(t, run.IsDone(), "a running task was displaced")
			k.Release()
			quiesce(t, e, run)
		})
	})
}

func TestDiscardOldestBlockingCallerWaitsAndDisplacesNobody(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e, k, run := discardOldest(t, mode, rec)
			w1 := submitPrio(t, e, "a", "w1", groupconc.PriorityLowest, succeed)
			w2 := submitPrio(t, e, "a", "w2", groupconc.PriorityLowest, succeed)
			c := submitBlocking(t.Context(), e, "a", "c", succeed, groupconc.SubmitOptions{Priority: groupconc.PriorityHighest})
			synctest.Wait()
			require.False(t, c.returned(), "a blocking caller did not wait")
			assert.False(t, w1.IsDone(), "a blocking caller displaced a waiting task")
			assert.False(t, w2.IsDone())
			k.Release()
			<-c.done
			require.NoError(t, c.err)
			quiesce(t, e, run, w1, w2, c.h)
			assert.Equal(t, uint64(0), e.Stats().Rejected)
		})
	})
}

// TestDiscardOldestCallerPastMaxWaitDisplacesNobody: a Block caller is
// turned away at MaxWait as under RejectDiscard; it blocked, so it makes
// no room.
func TestDiscardOldestCallerPastMaxWaitDisplacesNobody(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e, k, run := discardOldest(t, mode, rec)
			w1 := submitPrio(t, e, "a", "w1", groupconc.PriorityLowest, succeed)
			w2 := submitPrio(t, e, "a", "w2", groupconc.PriorityLowest, succeed)
			c := submitBlocking(t.Context(), e, "a", "c", succeed, groupconc.SubmitOptions{MaxWait: time.Second})
			<-c.done
			require.NoError(t, c.err)
			r, err := c.h.Await(t.Context())
			assert.Equal(t, groupconc.StatusRejected, r.Status)
			assert.NoError(t, err)
			assert.Equal(t, groupconc.ReasonWaitTimeout, rec.Reason("a", "c"))
			synctest.Wait()
			assert.False(t, w1.IsDone(), "the timed-out caller displaced a waiting task")
			assert.False(t, w2.IsDone())
			k.Release()
			quiesce(t, e, run, w1, w2)
		})
	})
}

func TestADisplacedDoReturnsARejectedErrorAndNeverRunsFn(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e := newExecutor(t, modeBuilder(mode).RejectionPolicy(groupconc.RejectDiscardOldest).
				DefaultQueueThresholdPerGroup(1).TaskLifecycleListener(rec))
			k := newGatedTask(t, 0)
			run := submit(t, t.Context(), e, "a", "run", k.Fn)
			synctest.Wait()
			ran := false
			var err error
			var v int
			done := make(chan struct{})
			go func() {
				defer close(done)
				v, err = groupconc.Do(t.Context(), e, "a", func(context.Context) (int, error) { ran = true; return 5, nil },
					groupconc.SubmitOptions{Priority: groupconc.PriorityLow})
			}()
			synctest.Wait()
			n := submit(t, t.Context(), e, "a", "n", succeed)
			<-done
			assert.False(t, ran)
			assert.Zero(t, v)
			var re *groupconc.RejectedError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, groupconc.ReasonDisplaced, re.Reason)
			k.Release()
			quiesce(t, e, run, n)
			st := e.Stats()
			assert.Equal(t, uint64(1), st.Rejected)
			assert.Equal(t, st.Submitted, st.Succeeded+st.Rejected)
		})
	})
}

func TestPriorityOrdersTheBulkheadLine(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).DefaultMaxInFlightPerGroup(1).DefaultMaxConcurrencyPerGroup(4))
			k := newGatedTask(t, 0)
			run := submit(t, t.Context(), e, "a", "run", k.Fn)
			synctest.Wait()
			var log startLog
			var hs []*groupconc.TaskHandle[int]
			for _, x := range []struct {
				id string
				p  groupconc.Priority
			}{{"low1", groupconc.PriorityLow}, {"n1", 0}, {"high", groupconc.PriorityHigh}, {"low2", groupconc.PriorityLow}, {"n2", groupconc.PriorityNormal}, {"top", groupconc.PriorityHighest}} {
				hs = append(hs, submitPrio(t, e, "a", x.id, x.p, log.task(x.id)))
			}
			synctest.Wait()
			k.Release()
			quiesce(t, e, append(hs, run)...)
			assert.Equal(t, []string{"top", "high", "n1", "n2", "low1", "low2"}, log.order())
		})
	})
}

func TestARaisedLimitStartsTheWaitingTasksByPriority(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode))
			k := newGatedTask(t, 0)
			run := submit(t, t.Context(), e, "a", "run", k.Fn)
			synctest.Wait()
			low := newGatedTask(t, 0)
			high := newGatedTask(t, 0)
			hl := submitGated(t, e, "a", "low", low, groupconc.SubmitOptions{Priority: groupconc.PriorityLow})
			hh := submitGated(t, e, "a", "high", high, groupconc.SubmitOptions{Priority: groupconc.PriorityHigh})
			synctest.Wait()
			require.NoError(t, e.UpdatePolicy(mustBuild(t, modeBuilder(mode).DefaultMaxConcurrencyPerGroup(2))))
			synctest.Wait()
			assert.True(t, high.started.Load(), "the raised limit did not start the high task")
			assert.False(t, low.started.Load(), "the raised limit started the low task before the high one")
			k.Release()
			low.Release()
			high.Release()
			quiesce(t, e, run, hl, hh)
		})
	})
}

func TestAResumedGroupStartsItsTasksByPriority(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode))
			k := newGatedTask(t, 0)
			run := submit(t, t.Context(), e, "a", "run", k.Fn)
			synctest.Wait()
			yes, no := true, false
			require.NoError(t, e.SetGroupOverride("a", groupconc.GroupOverride{Paused: &yes}))
			var log startLog
			var hs []*groupconc.TaskHandle[int]
			for _, x := range []struct {
				id string
				p  groupconc.Priority
			}{{"low", groupconc.PriorityLow}, {"n", 0}, {"high", groupconc.PriorityHigh}} {
				hs = append(hs, submitPrio(t, e, "a", x.id, x.p, log.task(x.id)))
			}
			k.Release()
			synctest.Wait()
			assert.Empty(t, log.order(), "a paused group started a task")
			require.NoError(t, e.SetGroupOverride("a", groupconc.GroupOverride{Paused: &no}))
			quiesce(t, e, append(hs, run)...)
			assert.Equal(t, []string{"high", "n", "low"}, log.order())
		})
	})
}

// TestBlockedCallersNeverWaitForAnotherGroupsSlots: group "a"'s queue is
// full and has a blocked caller; a Block caller of group "b" is accepted at
// once.
func TestBlockedCallersNeverWaitForAnotherGroupsSlots(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e, ks, hs := fullGroup(t, mode, nil)
			ca := submitBlocking(t.Context(), e, "a", "ca", succeed, groupconc.SubmitOptions{})
			synctest.Wait()
			require.False(t, ca.returned())
			kb := newGatedTask(t, 0)
			cb := submitBlocking(t.Context(), e, "b", "cb", kb.Fn, groupconc.SubmitOptions{})
			synctest.Wait()
			require.True(t, cb.returned(), "a caller of b waits behind a's queue")
			require.NoError(t, cb.err)
			assert.True(t, kb.started.Load())
			gs, _ := e.GroupStats("b")
			assert.Equal(t, 0, gs.Blocked)
			kb.Release()
			ks[0].Release()
			ks[1].Release()
			<-ca.done
			require.NoError(t, ca.err)
			quiesce(t, e, append(hs, cb.h, ca.h)...)
		})
	})
}

// TestABlockedCallersTaskCountsAsSubmittedWhenItIsAccepted: its
// Submitted time, and so its QueueWait, start when the slot is handed over.
func TestABlockedCallersTaskCountsAsSubmittedWhenItIsAccepted(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e, ks, hs := fullGroup(t, mode, builder().TaskLifecycleListener(rec))
			c := submitBlocking(t.Context(), e, "a", "c", succeed, groupconc.SubmitOptions{})
			synctest.Wait()
			assert.Empty(t, rec.Events("a", "c"), "a blocked caller's task was announced")
			time.Sleep(5 * time.Second) // fake clock
			gs, _ := e.GroupStats("a")
			assert.Equal(t, 1, gs.Waiting)
			ks[0].Release()
			synctest.Wait()
			accepted := time.Now()
			require.True(t, c.returned())
			time.Sleep(2 * time.Second) // fake clock
			ks[1].Release()
			r := c.h.Wait()
			assert.Equal(t, accepted, r.Submitted, "Submitted is when the slot was handed over")
			assert.Equal(t, 2*time.Second, r.QueueWait())
			quiesce(t, e, hs...)
		})
	})
}
