package groupconc_test

// What a task's function does decides its outcome; a panic or
// runtime.Goexit never escapes, and the permits are back before the handle
// completes, whatever the way out.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTaskOutcomeFollowsWhatTheFunctionReturns(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		type trigger func(e *groupconc.GroupExecutor, cancelCaller context.CancelFunc)
		var (
			none         trigger = func(*groupconc.GroupExecutor, context.CancelFunc) {}
			cancelCaller trigger = func(_ *groupconc.GroupExecutor, c context.CancelFunc) { c() }
			stopGroup    trigger = func(e *groupconc.GroupExecutor, _ context.CancelFunc) { e.ShutdownGroup("g") }
		)
		waitDone := func(ctx context.Context) { <-ctx.Done() }
		errDoneOpen := errors.New("Err set but Done still open")
		polled := func(ctx context.Context) (int, error) {
			if !pollDone(ctx) {
				return 0, errDoneOpen
			}
			return 0, ctx.Err()
		}
		cases := []struct {
			name       string
			fn         groupconc.Task[int]
			timeout    time.Duration // caller context deadline, if any
			trigger    trigger
			wantStatus groupconc.TaskStatus
			wantValue  int
			wantErr    error // nil: Err must be nil
		}{
			{
				name:       "value and nil error is SUCCESS",
				fn:         func(context.Context) (int, error) { return 42, nil },
				trigger:    none,
				wantStatus: groupconc.StatusSuccess, wantValue: 42,
			},
			{
				name:       "error is FAILED with that error",
				fn:         func(context.Context) (int, error) { return 0, errBoom },
				trigger:    none,
				wantStatus: groupconc.StatusFailed, wantErr: errBoom,
			},
			{
				name:       "context.Canceled while context live is FAILED",
				fn:         func(context.Context) (int, error) { return 0, context.Canceled },
				trigger:    none,
				wantStatus: groupconc.StatusFailed, wantErr: context.Canceled,
			},
			{
				name:       "DeadlineExceeded while context live is FAILED",
				fn:         func(context.Context) (int, error) { return 0, context.DeadlineExceeded },
				trigger:    none,
				wantStatus: groupconc.StatusFailed, wantErr: context.DeadlineExceeded,
			},
			{
				name:       "ctx.Err after caller cancel is CANCELLED",
				fn:         func(ctx context.Context) (int, error) { waitDone(ctx); return 0, ctx.Err() },
				trigger:    cancelCaller,
				wantStatus: groupconc.StatusCancelled, wantErr: context.Canceled,
			},
			{
				name: "wrapped ctx.Err after caller cancel is CANCELLED",
				fn: func(ctx context.Context) (int, error) {
					waitDone(ctx)
					return 0, fmt.Errorf("stopped: %w", ctx.Err())
				},
				trigger:    cancelCaller,
				wantStatus: groupconc.StatusCancelled, wantErr: context.Canceled,
			},
			{
				name: "DeadlineExceeded after caller deadline is CANCELLED",
				fn: func(ctx context.Context) (int, error) {
					waitDone(ctx)
					return 0, context.DeadlineExceeded
				},
				timeout:    time.Second,
				trigger:    none,
				wantStatus: groupconc.StatusCancelled, wantErr: context.DeadlineExceeded,
			},
			{
				name:       "ctx.Err after ShutdownGroup is CANCELLED",
				fn:         func(ctx context.Context) (int, error) { waitDone(ctx); return 0, ctx.Err() },
				trigger:    stopGroup,
				wantStatus: groupconc.StatusCancelled, wantErr: context.Canceled,
			},
			{
				name:       "polled ctx.Err after caller cancel is CANCELLED",
				fn:         polled,
				trigger:    cancelCaller,
				wantStatus: groupconc.StatusCancelled, wantErr: context.Canceled,
			},
			{
				name:       "polled ctx.Err after ShutdownGroup is CANCELLED",
				fn:         polled,
				trigger:    stopGroup,
				wantStatus: groupconc.StatusCancelled, wantErr: context.Canceled,
			},
			{
				name:       "polled ctx.Err after caller deadline is CANCELLED",
				fn:         polled,
				timeout:    time.Second,
				trigger:    none,
				wantStatus: groupconc.StatusCancelled, wantErr: context.DeadlineExceeded,
			},
			{
				name:       "other error after cancel is FAILED",
				fn:         func(ctx context.Context) (int, error) { waitDone(ctx); return 0, errBoom },
				trigger:    cancelCaller,
				wantStatus: groupconc.StatusFailed, wantErr: errBoom,
			},
			{
				name:       "value and nil error after cancel is SUCCESS",
				fn:         func(ctx context.Context) (int, error) { waitDone(ctx); return 5, nil },
				trigger:    cancelCaller,
				wantStatus: groupconc.StatusSuccess, wantValue: 5,
			},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := groupconc.New(mustBuild(t, builder().Isolation(mode)))
					defer e.Close()
					ctx, cancel := context.WithCancel(t.Context())
					defer cancel()
					if c.timeout > 0 {
						ctx, cancel = context.WithTimeout(ctx, c.timeout)
						defer cancel()
					}
					h := submit(t, ctx, e, "g", "t", c.fn)
					synctest.Wait()
					c.trigger(e, cancel)
					r, err := h.Await(t.Context())
					assert.NoError(t, err, "Await error: the task's own outcome is in the result")
					assert.Equal(t, c.wantStatus, r.Status)
					assert.Equal(t, c.wantValue, r.Value)
					if c.wantErr == nil {
						assert.NoError(t, r.Err)
					} else {
						assert.ErrorIs(t, r.Err, c.wantErr)
					}
					if c.wantErr == errBoom {
						assert.Equal(t, errBoom, r.Err, "a task's own error is returned unwrapped")
					}
					synctest.Wait()
					assert.NoError(t, e.Quiescent())
				})
			})
		}
	})
}

func TestTaskPanicOrGoexitFailsWithPanicErrorAndReleasesPermits(t *testing.T) {
	cases := []struct {
		name  string
		fn    func()
		check func(t *testing.T, pe *groupconc.PanicError)
	}{
		{
			name: "panic string",
			fn:   func() { panic("x") },
			check: func(t *testing.T, pe *groupconc.PanicError) {
				assert.Equal(t, "x", pe.Value)
				assert.NotEmpty(t, pe.Stack)
			},
		},
		{
			name: "panic error",
			fn:   func() { panic(errBoom) },
			check: func(t *testing.T, pe *groupconc.PanicError) {
				assert.ErrorIs(t, pe, errBoom, "errors.Is through *PanicError")
				assert.NotEmpty(t, pe.Stack)
			},
		},
		{
			name: "panic nil",
			fn:   func() { panic(nil) },
			check: func(t *testing.T, pe *groupconc.PanicError) {
				var pn *runtime.PanicNilError
				assert.ErrorAs(t, pe, &pn, "panic(nil) value")
				assert.NotEmpty(t, pe.Stack)
			},
		},
		{
			name:  "runtime.Goexit",
			fn:    runtime.Goexit,
			check: func(*testing.T, *groupconc.PanicError) {},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := groupconc.New(allLayersPolicy(t))
				defer e.Close()
				gate := make(chan struct{})
				bad := make([]*groupconc.TaskHandle[int], 2)
				for i := range bad {
					bad[i] = submit(t, t.Context(), e, "g", fmt.Sprint("bad", i), func(context.Context) (int, error) {
						<-gate
						c.fn()
						return 1, nil
					})
				}
				// Queued behind the failing tasks: one waits for concurrency,
				// one for the bulkhead.
				nextGate := make(chan struct{})
				var next gauge
				var queued []*groupconc.TaskHandle[int]
				for i := range 2 {
					queued = append(queued, submit(t, t.Context(), e, "g", fmt.Sprint("next", i), gated(nextGate, i, &next)))
				}
				synctest.Wait()
				require.Zero(t, next.cur.Load(), "precondition: queued tasks wait")
				close(gate)
				for _, h := range bad {
					r := h.Wait() // must not hang
					assert.Equal(t, groupconc.StatusFailed, r.Status)
					var pe *groupconc.PanicError
					if assert.ErrorAs(t, r.Err, &pe) {
						c.check(t, pe)
					}
				}
				synctest.Wait()
				assert.EqualValues(t, 2, next.cur.Load(), "queued tasks running once the failed ones released their permits")
				gs, ok := e.GroupStats("g")
				require.True(t, ok)
				assert.Equal(t, 2, gs.Running, "GroupStats.Running")
				openGate(t, nextGate, queued, "queued")
				synctest.Wait()
				assert.NoError(t, e.Quiescent())
				assert.Equal(t, uint64(2), e.Stats().Failed, "Stats.Failed")
				fullBatch(t, e, "g")
			})
		})
	}
}

func TestPermitsAreReleasedBeforeTheHandleCompletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every layer limited to 1 and no task may wait: a task submitted
		// while any permit of the previous one is still held is rejected.
		p := mustBuild(t, groupconc.NewPolicyBuilder().
			GlobalMaxInFlight(1).GlobalQueueThreshold(0).
			DefaultMaxInFlightPerGroup(1).DefaultMaxConcurrencyPerGroup(1).
			DefaultQueueThresholdPerGroup(0))
		e := groupconc.New(p)
		defer e.Close()
		var ran atomic.Int64
		submitNext := func(i int) *groupconc.TaskHandle[int] {
			return submit(t, t.Context(), e, "g", fmt.Sprint(i), func(context.Context) (int, error) {
				ran.Add(1)
				return i, nil
			})
		}
		const n = 300
		h := submitNext(0)
		for i := 1; i <= n; i++ {
			if i%2 == 0 {
				<-h.Done()
			} else {
				// Spin rather than block, so that on a multi-core run this
				// goroutine sees the handle complete the instant it does,
				// not once the task's goroutine has moved on.
				for spins := 0; !h.IsDone(); spins++ {
					if spins%(1<<12) == 1<<12-1 {
						runtime.Gosched()
					}
				}
			}
			// Look, and submit the next task, before anything else.
			s := e.Stats()
			gs, ok := e.GroupStats("g")
			var next *groupconc.TaskHandle[int]
			if i < n {
				next = submitNext(i)
			}
			require.Zero(t, s.GlobalInFlight, "Stats.GlobalInFlight right after task %d completed", i-1)
			require.Zero(t, s.Running, "Stats.Running right after task %d completed", i-1)
			require.True(t, ok)
			require.Zero(t, gs.Running, "GroupStats.Running right after task %d completed", i-1)
			require.Zero(t, gs.InFlight, "GroupStats.InFlight right after task %d completed", i-1)
			r := h.Wait()
			require.Equal(t, groupconc.StatusSuccess, r.Status,
				"task %d, submitted right after task %d completed, should start at once: %v", i-1, i-2, r.Err)
			require.Equal(t, i-1, r.Value)
			h = next
		}
		assert.EqualValues(t, n, ran.Load(), "tasks run")
		// And under a plain limit-1 group: the next task runs at once.
		gate := make(chan struct{})
		h1 := submit(t, t.Context(), e, "h", "1", gated(gate, 1))
		synctest.Wait()
		close(gate)
		require.Equal(t, groupconc.StatusSuccess, h1.Wait().Status)
		gs, ok := e.GroupStats("h")
		require.True(t, ok)
		assert.Zero(t, gs.Running, "GroupStats.Running right after task 1 completed")
		h2 := submit(t, t.Context(), e, "h", "2", func(context.Context) (int, error) { return 2, nil })
		r2 := h2.Wait()
		assert.Equal(t, groupconc.StatusSuccess, r2.Status, "task 2 after task 1: %v", r2.Err)
	})
}
