package groupconc_test

// Rejected tasks: every policy and handler resolves the handle, queue
// slots come back, and a handler may panic, block or re-enter.

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With the queue full, every policy resolves the rejected task's handle
// (none hangs), emits exactly one rejected event, and starts it only when the
// policy runs it. Under abort and discard the handle is complete when Submit
// returns (the design's choice: a REJECTED handle, not a Submit error).
func TestRejectedHandleAlwaysResolves(t *testing.T) {
	cases := []struct {
		name      string
		set       func(*groupconc.PolicyBuilder)
		handler   bool
		status    groupconc.TaskStatus
		awaitErr  bool
		ran       bool
		doneAtOnc bool
	}{
		{name: "abort", set: func(b *groupconc.PolicyBuilder) { b.RejectionPolicy(groupconc.RejectAbort) }, status: groupconc.StatusRejected, awaitErr: true, doneAtOnc: true},
		{name: "discard", set: func(b *groupconc.PolicyBuilder) { b.RejectionPolicy(groupconc.RejectDiscard) }, status: groupconc.StatusRejected, doneAtOnc: true},
		{name: "caller-runs", set: func(b *groupconc.PolicyBuilder) { b.RejectionPolicy(groupconc.RejectCallerRuns) }, status: groupconc.StatusSuccess, ran: true},
		{name: "handler-reject", handler: true, set: func(b *groupconc.PolicyBuilder) {
			b.RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) { return nil, groupconc.ErrRejected })
		}, status: groupconc.StatusRejected}, // the handler replaces the policy: not RejectAbort, so no Await error
		{name: "handler-fallback", handler: true, set: func(b *groupconc.PolicyBuilder) {
			b.RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) { return 42, nil })
		}, status: groupconc.StatusSuccess},
		{name: "handler-run", handler: true, set: func(b *groupconc.PolicyBuilder) {
			b.RejectionHandler(func(ctx context.Context, rj *groupconc.Rejection) (any, error) { return rj.Run(ctx) })
		}, status: groupconc.StatusSuccess, ran: true},
		{name: "handler-wrong-type", handler: true, set: func(b *groupconc.PolicyBuilder) {
			b.RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) { return "not an int", nil })
		}, status: groupconc.StatusFailed},
	}
	for _, c := range cases {
		for _, where := range []string{"global", "group"} {
			t.Run(c.name+"/"+where, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					b := builder().DefaultMaxConcurrencyPerGroup(1)
					if where == "global" {
						b.GlobalMaxInFlight(1).GlobalQueueThreshold(1).DefaultMaxConcurrencyPerGroup(groupconc.Unlimited)
					} else {
						b.DefaultQueueThresholdPerGroup(1)
					}
					c.set(b)
					r := newEnv(t, b)
					r.o.handler = c.handler
					gate := make(chan struct{})
					r.submit("a", block(gate))
					r.submit("a", block(gate)) // fills the queue
					synctest.Wait()
					h := r.submit("a", succeed)
					if c.doneAtOnc {
						require.True(t, h.IsDone(), "resolved inside Submit")
					}
					synctest.Wait()
					ctx, cancel := context.WithTimeout(r.ctx, time.Second)
					defer cancel()
					res, err := h.Await(ctx)
					require.NotErrorIs(t, err, context.DeadlineExceeded, "I7: the rejected handle must resolve")
					assert.Equal(t, c.status, res.Status)
					if c.awaitErr {
						assert.ErrorIs(t, err, groupconc.ErrRejected)
						var re *groupconc.RejectedError
						assert.ErrorAs(t, err, &re)
					} else {
						assert.NoError(t, err)
					}
					if res.Status == groupconc.StatusRejected {
						var re *groupconc.RejectedError
						require.ErrorAs(t, res.Err, &re)
						assert.Contains(t, []string{groupconc.ReasonGlobalQueueFull, groupconc.ReasonGroupQueueFull}, re.Reason)
					}
					l, _ := r.o.rec.lookup("a", h.TaskID())
					rejects, starts := 0, 0
					for _, k := range l.seq() {
						switch k {
						case oracleRejected:
							rejects++
						case oracleStarted:
							starts++
						}
					}
					assert.Equal(t, 1, rejects, "exactly one rejected event")
					assert.Equal(t, c.ran, starts == 1, "started only when the task actually runs")
					close(gate)
					r.finish()
				})
			})
		}
	}
}

// Waiters holding queue slots give them back however they end
// (Cancel, their context, their deadline, ShutdownGroup): afterwards as many
// new tasks as the threshold may wait again, and one more is rejected.
func TestCancelledWaitersGiveBackTheirQueueSlots(t *testing.T) {
	for _, where := range []string{"global", "group"} {
		t.Run(where, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const q = 3
				b := builder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(q)
				if where == "global" {
					b = builder().GlobalMaxInFlight(1).GlobalQueueThreshold(q).DefaultMaxConcurrencyPerGroup(groupconc.Unlimited)
				}
				r := newEnv(t, b)
				gate := make(chan struct{})
				r.submit("hold", block(gate))
				synctest.Wait()
				key := "hold" // waiters must meet the holder at the limited layer
				if where == "global" {
					key = "w"
				}
				fillQueue := func() []*groupconc.TaskHandle[int] {
					var ws []*groupconc.TaskHandle[int]
					for range q {
						ws = append(ws, r.submit(key, block(gate)))
					}
					synctest.Wait()
					for _, w := range ws {
						require.False(t, w.IsDone(), "a waiter must be queued, not rejected")
					}
					over := r.submit(key, succeed)
					require.Equal(t, groupconc.StatusRejected, over.Wait().Status, "the queue is full")
					return ws
				}

				// Round 1: Cancel, caller ctx, caller deadline.
				ctx, cancel := context.WithCancel(r.ctx)
				dctx, dcancel := context.WithTimeout(r.ctx, time.Second)
				defer dcancel()
				ws := []*groupconc.TaskHandle[int]{
					r.submit(key, block(gate)),
					r.submitCtx(ctx, key, block(gate)),
					r.submitCtx(dctx, key, block(gate)),
				}
				synctest.Wait()
				ws[0].Cancel()
				cancel()
				time.Sleep(2 * time.Second) // fake clock: the deadline passes
				synctest.Wait()
				for _, w := range ws {
					require.Equal(t, groupconc.StatusCancelled, w.Wait().Status)
				}

				// Round 2: the slots are free again; then ShutdownGroup.
				ws = fillQueue()
				r.e.ShutdownGroup(key)
				synctest.Wait()
				for _, w := range ws {
					require.Equal(t, groupconc.StatusCancelled, w.Wait().Status)
				}
				if where == "group" {
					// ShutdownGroup also cancelled the holder's context; it
					// ignores it and holds its permit, so the group still
					// needs to queue.
					require.NotZero(t, r.e.Stats().Running)
				}
				// Round 3: still the full threshold.
				fillQueue()
				close(gate)
				r.finish()
			})
		})
	}
}

// A caller-runs task runs without permits, on its own goroutine: its
// panic becomes its FAILED result (never the Submit caller's), it holds and
// releases no permit, and it is counted in no running stat. After Shutdown
// has begun there is no caller-runs: Submit returns ErrClosed.
func TestCallerRunsPanicStaysOnTheTask(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			r := newEnv(t, builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).RejectionPolicy(groupconc.RejectCallerRuns))
			gate, crGate := make(chan struct{}), make(chan struct{})
			r.submit("a", block(gate))
			synctest.Wait()
			var h *groupconc.TaskHandle[int]
			assert.NotPanics(t, func() {
				h = r.submit("a", func(context.Context) (int, error) { <-crGate; panic("caller-runs boom") })
			})
			synctest.Wait()
			assert.True(t, r.started(h), "caller-runs runs it at once")
			assert.EqualValues(t, 1, r.o.gauges.outside.cur.Load(), "it runs outside the permits")
			gs, _ := r.e.GroupStats("a")
			assert.Equal(t, 1, gs.Running, "and is not counted running")
			assert.Equal(t, 0, gs.Waiting)
			close(crGate)
			res := h.Wait()
			assert.Equal(t, groupconc.StatusFailed, res.Status)
			var pe *groupconc.PanicError
			require.ErrorAs(t, res.Err, &pe)
			assert.Equal(t, "caller-runs boom", pe.Value)
			close(gate)
			r.finish()
			assert.EqualValues(t, 1, r.o.groupMax("a"), "the permitted gauge never saw the caller-runs task")
		})
	})
}

// A custom rejection handler that re-enters the executor, panics, or
// blocks until its context ends: no deadlock, no escaped panic, Close still
// returns, and the executor keeps working.
func TestRejectionHandlerThatResubmits(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			var r *env
			var depth atomic.Int32
			b := builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).
				RejectionHandler(func(ctx context.Context, rj *groupconc.Rejection) (any, error) {
					key := "overflow"
					if depth.Add(1) <= 3 {
						key = rj.GroupKey // re-enter the same saturated group: rejected again
					}
					h, err := oracleSubmit(r.o, ctx, r.e, key, rj.TaskID+"+", succeed)
					if err != nil {
						return nil, err
					}
					res, err := h.Await(ctx)
					if err != nil {
						return nil, err
					}
					return res.Value, res.Err
				})
			r = newEnv(t, b)
			r.o.handler = true
			gate := make(chan struct{})
			r.submit("a", block(gate))
			synctest.Wait()
			h := r.submit("a", succeed)
			synctest.Wait()
			assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, "the handler's re-submission ran in the overflow group")
			close(gate)
			r.finish()
		})
	})
}

func TestRejectionHandlerThatPanics(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			b := builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).
				RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) { panic("handler boom") })
			r := newEnv(t, b)
			r.o.handler = true
			gate := make(chan struct{})
			r.submit("a", block(gate))
			synctest.Wait()
			h := r.submit("a", succeed)
			res := h.Wait()
			assert.Equal(t, groupconc.StatusFailed, res.Status)
			var pe *groupconc.PanicError
			require.ErrorAs(t, res.Err, &pe)
			assert.Equal(t, "handler boom", pe.Value)
			close(gate)
			synctest.Wait()
			assert.Equal(t, groupconc.StatusSuccess, r.submit("a", succeed).Wait().Status, "the executor still works")
			r.finish()
		})
	})
}

func TestRejectionHandlerThatBlocksDoesNotBlockClose(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			b := builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).
				RejectionHandler(func(ctx context.Context, _ *groupconc.Rejection) (any, error) {
					<-ctx.Done()
					return nil, ctx.Err()
				})
			r := newEnv(t, b)
			r.o.handler = true
			gate := make(chan struct{})
			r.submit("a", blockCtx(gate))
			h := r.submit("a", succeed)
			synctest.Wait()
			require.False(t, h.IsDone(), "the handler blocks")
			start := time.Now()
			require.NoError(t, r.e.Close())
			assert.Zero(t, time.Since(start), "Close returns at once")
			res := h.Wait()
			assert.Equal(t, groupconc.StatusCancelled, res.Status, "the handler returned its context's error")
			r.finish()
		})
	})
}

func TestZeroQueueThresholdRejectsWithoutBlocking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newEnv(t, builder().GlobalMaxInFlight(1).GlobalQueueThreshold(0).DefaultQueueThresholdPerGroup(0))
		gate := make(chan struct{})
		r.submit("a", block(gate))
		start := time.Now()
		for i := range 10 {
			h := r.submit(fmt.Sprintf("g%d", i%3), succeed)
			require.True(t, h.IsDone(), "rejected inside Submit")
			assert.Equal(t, groupconc.StatusRejected, h.Wait().Status)
		}
		assert.Zero(t, time.Since(start))
		close(gate)
		r.finish()
	})
}
