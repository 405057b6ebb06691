package groupconc_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

func TestListenerSeesEachTasksEventsInOrder(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			rec := newRecorder()
			e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode).
				DefaultMaxConcurrencyPerGroup(1).
				PerGroupQueueThreshold(map[string]int{"r": 0}).
				TaskLifecycleListener(rec))
			crec := newRecorder()
			ce := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode).
				DefaultQueueThresholdPerGroup(0).
				RejectionPolicy(groupconc.RejectCallerRuns).
				TaskLifecycleListener(crec))

			a1, a2, a3 := newGatedTask(t, 1), newGatedTask(t, 2), newGatedTask(t, 3)
			hA1 := submit(t, t.Context(), e, "a", "runs", a1.Fn)
			synctest.Wait()
			hA2 := submit(t, t.Context(), e, "a", "waits-then-runs", a2.Fn)
			hA3 := submit(t, t.Context(), e, "a", "cancelled-waiting", a3.Fn)
			synctest.Wait()
			assert.Equal(t, []string{evSubmitted, evStarted}, rec.Events("a", "runs"))
			assert.Equal(t, []string{evSubmitted}, rec.Events("a", "waits-then-runs"))
			require.True(t, hA3.Cancel())

			r1 := newGatedTask(t, 4)
			hR1 := submit(t, t.Context(), e, "r", "runs", r1.Fn)
			synctest.Wait()
			hR2 := submit(t, t.Context(), e, "r", "rejected", r1.Fn)

			errBoom := errors.New("boom")
			hErr := submit(t, t.Context(), e, "f", "error", func(context.Context) (int, error) { return 0, errBoom })
			hPanic := submit(t, t.Context(), e, "p", "panic", func(context.Context) (int, error) { panic("boom") })

			c1, c2 := newGatedTask(t, 5), newGatedTask(t, 6)
			hC1 := submit(t, t.Context(), ce, "c", "runs", c1.Fn)
			synctest.Wait()
			hC2 := submit(t, t.Context(), ce, "c", "caller-runs", c2.Fn)

			for _, k := range []*gatedTask{a1, a2, a3, r1, c1, c2} {
				k.Release()
			}
			quiesce(t, e, hA1, hA2, hA3, hR1, hR2, hErr, hPanic)
			quiesce(t, ce, hC1, hC2)

			ran := []string{evSubmitted, evStarted, evCompleted}
			for _, c := range []struct {
				rec          *recorder
				h            *groupconc.TaskHandle[int]
				want         []string
				wantComplete bool
			}{
				{rec, hA1, ran, true},
				{rec, hA2, ran, true},
				{rec, hA3, []string{evSubmitted, evCompleted}, true},
				{rec, hR1, ran, true},
				{rec, hR2, []string{evSubmitted, evRejected}, false},
				{rec, hErr, ran, true},
				{rec, hPanic, ran, true},
				{crec, hC1, ran, true},
				{crec, hC2, []string{evSubmitted, evRejected, evStarted, evCompleted}, true},
			} {
				g, id := c.h.GroupKey(), c.h.TaskID()
				assert.Equal(t, c.want, c.rec.Events(g, id), "events of %s/%s", g, id)
				got, ok := c.rec.Result(g, id)
				if !c.wantComplete {
					assert.False(t, ok, "%s/%s: OnCompleted for a task that never ran", g, id)
					continue
				}
				if assert.True(t, ok, "%s/%s: no OnCompleted", g, id) {
					want := c.h.Wait()
					assert.Equal(t, want.Status, got.Status, "%s/%s: OnCompleted status", g, id)
					assert.Equal(t, want.Err, got.Err, "%s/%s: OnCompleted err", g, id)
					if want.Status == groupconc.StatusSuccess {
						assert.Equal(t, want.Value, got.Value, "%s/%s: OnCompleted value", g, id)
					}
				}
			}
			assert.Equal(t, groupconc.StatusCancelled, hA3.Wait().Status)
		})
	})
}

func TestListenerPanicsAreRecoveredAndTheExecutorKeepsWorking(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			var submitted, started, completed, rejected atomic.Int32
			l := groupconc.ListenerFuncs{
				Submitted: func(string, string) { submitted.Add(1); panic("OnSubmitted") },
				Started:   func(string, string) { started.Add(1); panic("OnStarted") },
				Completed: func(string, string, groupconc.GroupResult[any]) { completed.Add(1); panic("OnCompleted") },
				Rejected:  func(string, string, string) { rejected.Add(1); panic(errors.New("OnRejected")) },
			}
			e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode).
				DefaultMaxConcurrencyPerGroup(1).
				PerGroupQueueThreshold(map[string]int{"a": 1, "c": 0}).
				TaskLifecycleListener(l))
			a1, a2 := newGatedTask(t, 1), newGatedTask(t, 2)
			hA1 := submit(t, t.Context(), e, "a", "a1", a1.Fn)
			synctest.Wait()
			require.True(t, a1.started.Load())
			hA2 := submit(t, t.Context(), e, "a", "a2", a2.Fn)
			hA3 := submit(t, t.Context(), e, "a", "a3", a2.Fn)
			synctest.Wait()
			requireRejected(t, hA3, "group")
			a1.Release()
			a2.Release()
			quiesce(t, e, hA1, hA2)
			assert.Equal(t, 1, doneResult(t, hA1).Value)
			assert.Equal(t, 2, doneResult(t, hA2).Value)

			// A panicking task completes FAILED with the listener panicking
			// around it.
			hPanic := submit(t, t.Context(), e, "b", "panic", func(context.Context) (int, error) { panic("task") })
			quiesce(t, e, hPanic)
			var pe *groupconc.PanicError
			require.ErrorAs(t, hPanic.Wait().Err, &pe)
			assert.Equal(t, "task", pe.Value)

			assert.Equal(t, int32(4), submitted.Load(), "OnSubmitted calls")
			assert.Equal(t, int32(3), started.Load(), "OnStarted calls")
			assert.Equal(t, int32(3), completed.Load(), "OnCompleted calls")
			assert.Equal(t, int32(1), rejected.Load(), "OnRejected calls")

			// The executor still accepts, runs and limits tasks.
			c1, c2 := newGatedTask(t, 5), newGatedTask(t, 6)
			hC1 := submit(t, t.Context(), e, "c", "c1", c1.Fn)
			synctest.Wait()
			require.True(t, c1.started.Load())
			requireRejected(t, submit(t, t.Context(), e, "c", "c2", c2.Fn), "group")
			c1.Release()
			quiesce(t, e, hC1)
			assert.Equal(t, groupconc.StatusSuccess, hC1.Wait().Status)
			s := e.Stats()
			assert.Equal(t, uint64(6), s.Submitted, "submitted")
			assert.Equal(t, s.Submitted, s.Succeeded+s.Failed+s.Cancelled+s.Rejected, "outcomes")
		})
	})
}

func TestListenerCanSubmitFromOnCompletedWithoutDeadlock(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			var (
				e    *groupconc.GroupExecutor
				next = make(chan *groupconc.TaskHandle[int], 1)
				ctx  = t.Context()
			)
			l := groupconc.ListenerFuncs{
				Completed: func(groupKey, taskID string, _ groupconc.GroupResult[any]) {
					if taskID != "first" {
						return
					}
					// Same group, concurrency 1: the first task's permit must
					// already be free, and no executor lock may be held here.
					h, err := groupconc.Submit(ctx, e, groupKey, "second", func(context.Context) (int, error) { return 2, nil })
					assert.NoError(t, err)
					next <- h
				},
			}
			e = newExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode).
				DefaultMaxConcurrencyPerGroup(1).
				DefaultQueueThresholdPerGroup(0).
				TaskLifecycleListener(l))
			first := submit(t, t.Context(), e, "a", "first", func(context.Context) (int, error) { return 1, nil })
			second := <-next
			require.NotNil(t, second)
			quiesce(t, e, first, second)
			assert.Equal(t, 1, first.Wait().Value)
			r := second.Wait()
			assert.Equal(t, groupconc.StatusSuccess, r.Status, "err %v", r.Err)
			assert.Equal(t, 2, r.Value)
		})
	})
}

func TestListenerFuncsWithNilFieldsIsFine(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		var zero groupconc.ListenerFuncs
		assert.NotPanics(t, func() {
			zero.OnSubmitted("a", "t")
			zero.OnStarted("a", "t")
			zero.OnCompleted("a", "t", groupconc.GroupResult[any]{})
			zero.OnRejected("a", "t", "reason")
		})

		var completed atomic.Int32
		for _, l := range []groupconc.ListenerFuncs{
			{},
			{Completed: func(string, string, groupconc.GroupResult[any]) { completed.Add(1) }},
		} {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode).
					DefaultQueueThresholdPerGroup(0).
					RejectionPolicy(groupconc.RejectCallerRuns).
					TaskLifecycleListener(l))
				busy := newGatedTask(t, 1)
				hBusy := submit(t, t.Context(), e, "a", "busy", busy.Fn)
				synctest.Wait()
				hCallerRuns := submit(t, t.Context(), e, "a", "caller-runs", func(context.Context) (int, error) { return 2, nil })
				hCancelled := submit(t, t.Context(), e, "b", "cancelled", busy.Fn)
				hCancelled.Cancel() // waiting or running: either way it completes once
				busy.Release()
				quiesce(t, e, hBusy, hCallerRuns, hCancelled)
				assert.Equal(t, 1, hBusy.Wait().Value)
				assert.Equal(t, 2, hCallerRuns.Wait().Value)
			})
		}
		assert.Equal(t, int32(3), completed.Load(), "OnCompleted calls of the listener that has Completed")
	})
}

// Listeners that panic in every event, re-enter the executor, or
// block: no escaped panic, no lock held (re-entry works), Close returns
// while one blocks, and every task's events still balance.
func TestListenerThatPanicsInEveryEvent(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			boom := groupconc.ListenerFuncs{
				Submitted: func(string, string) { panic("submitted") },
				Started:   func(string, string) { panic("started") },
				Completed: func(string, string, groupconc.GroupResult[any]) { panic("completed") },
				Rejected:  func(string, string, string) { panic("rejected") },
			}
			r := newEnv(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(1).RejectionPolicy(groupconc.RejectCallerRuns), boom)
			gate := make(chan struct{})
			var hs []*groupconc.TaskHandle[int]
			for range 4 { // 1 runs, 1 waits, 2 caller-run
				hs = append(hs, r.submit("a", block(gate)))
			}
			ctx, cancel := context.WithCancel(r.ctx)
			cancel()
			hs = append(hs, r.submitCtx(ctx, "a", succeed)) // cancelled at Submit
			synctest.Wait()
			close(gate)
			for _, h := range hs {
				h.Wait()
			}
			r.finish()
		})
	})
}

func TestListenerThatReentersTheExecutor(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			var r *env
			var follow atomic.Int32
			reenter := groupconc.ListenerFuncs{
				Started: func(g, _ string) {
					if g == "a" {
						_, _ = r.e.GroupStats(g)
						_ = r.e.Stats()
						r.e.ShutdownGroup("unknown")
					}
				},
				Completed: func(g, id string, _ groupconc.GroupResult[any]) {
					if g == "a" && follow.Add(1) <= 5 {
						_, err := oracleSubmit(r.o, context.Background(), r.e, "b", id+"+", succeed)
						assert.NoError(t, err)
					}
					if g == "b" {
						r.e.ShutdownGroup("b")
					}
				},
			}
			r = newEnv(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(2), reenter)
			for range 5 {
				r.submit("a", succeed)
			}
			synctest.Wait()
			assert.EqualValues(t, 5, follow.Load())
			r.finish()
		})
	})
}

func TestListenerThatBlocksDoesNotBlockClose(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			unblock := make(chan struct{})
			r := newEnv(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1), groupconc.ListenerFuncs{
				Started: func(g, _ string) {
					if g == "slow" {
						<-unblock
					}
				},
			})
			slow := r.submit("slow", succeed)
			fast := r.submit("fast", succeed)
			synctest.Wait()
			assert.Equal(t, groupconc.StatusSuccess, fast.Wait().Status, "a slow listener delays only its own task")
			assert.False(t, slow.IsDone())
			start := time.Now()
			require.NoError(t, r.e.Close())
			assert.Zero(t, time.Since(start))
			close(unblock)
			slow.Wait()
			r.finish()
		})
	})
}

// A listener that calls runtime.Goexit (t.FailNow in a test
// listener) in OnStarted. The design recovers listener panics, and for the
// task function it turns Goexit into FAILED so the handle never hangs; the
// same must hold when the listener does it on the task's goroutine: the
// permits must come back and the handle must complete.
func TestListenerGoexitDoesNotStrandTheTask(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			r := newEnv(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1), groupconc.ListenerFuncs{
				Started: func(g, _ string) {
					if g == "goexit" {
						runtime.Goexit()
					}
				},
			})
			h := r.submit("goexit", succeed)
			next := r.submit("goexit", succeed)
			ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
			defer cancel()
			_, err := h.Await(ctx)
			assert.NoError(t, err, "I3/I7: the handle of a task whose listener called Goexit never completes")
			_, err = next.Await(ctx)
			assert.NoError(t, err, "I2: the task behind it never gets the permit")
			assert.NoError(t, r.e.Quiescent(), "I2")
			// Let the bubble end whatever happened.
			require.NoError(t, r.e.Close())
			synctest.Wait()
		})
	})
}
