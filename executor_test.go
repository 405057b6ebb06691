package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// The core behaviour suite: one test per rule of DESIGN.md's paragraphs
// Submit, Outcomes, TaskHandle, ExecuteAll, Groups, Executor and Policy,
// plus the limits of the three layers. Everything about time, waiting or
// ordering runs inside a synctest bubble, with the executor created there.

var errCoreBoom = errors.New("boom")

// coreGauge counts the tasks inside a section and remembers the highest count.
type coreGauge struct{ cur, max atomic.Int64 }

func (g *coreGauge) enter() {
	n := g.cur.Add(1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			return
		}
	}
}

func (g *coreGauge) exit() { g.cur.Add(-1) }

type coreCtxKey struct{}

// coreBuild builds b and fails the test if it is invalid.
func coreBuild(t *testing.T, b *groupconc.PolicyBuilder) *groupconc.GroupPolicy {
	t.Helper()
	p, err := b.Build()
	require.NoError(t, err)
	require.NotNil(t, p)
	return p
}

// coreSubmit submits task and fails the test if Submit refuses it.
func coreSubmit(t *testing.T, ctx context.Context, e *groupconc.GroupExecutor, key, id string, task groupconc.Task[int]) *groupconc.TaskHandle[int] {
	t.Helper()
	h, err := groupconc.Submit(ctx, e, key, id, task)
	require.NoError(t, err)
	require.NotNil(t, h)
	return h
}

// coreGated returns a task that stays inside every gauge until gate closes,
// ignoring its context, then returns v.
func coreGated(gate <-chan struct{}, v int, gauges ...*coreGauge) groupconc.Task[int] {
	return coreGatedWork(gate, 0, v, gauges...)
}

// coreGatedWork is coreGated whose task, once gate closes, works for work on
// the fake clock before it leaves its gauges.
func coreGatedWork(gate <-chan struct{}, work time.Duration, v int, gauges ...*coreGauge) groupconc.Task[int] {
	return func(context.Context) (int, error) {
		for _, g := range gauges {
			g.enter()
		}
		defer func() {
			for _, g := range gauges {
				g.exit()
			}
		}()
		<-gate
		if work > 0 {
			time.Sleep(work)
		}
		return v, nil
	}
}

// coreSubmitRounds submits rounds tasks to each of keys in turn, task i of
// each key gated on gate (coreGatedWork, working for work after it) and
// returning i, counted in the gauges gaugesOf gives for its key.
func coreSubmitRounds(t *testing.T, e *groupconc.GroupExecutor, gate <-chan struct{}, work time.Duration, rounds int, keys []string, gaugesOf func(key string) []*coreGauge) []*groupconc.TaskHandle[int] {
	t.Helper()
	var hs []*groupconc.TaskHandle[int]
	for i := range rounds {
		for _, key := range keys {
			hs = append(hs, coreSubmit(t, t.Context(), e, key, fmt.Sprint(i), coreGatedWork(gate, work, i, gaugesOf(key)...)))
		}
	}
	return hs
}

// coreOpenGate closes gate and checks that every task in hs, named what in
// messages, then succeeds.
func coreOpenGate(t *testing.T, gate chan struct{}, hs []*groupconc.TaskHandle[int], what string) {
	t.Helper()
	close(gate)
	for i, h := range hs {
		assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, "%s task %d", what, i)
	}
}

// coreNeverRuns returns a task that records in ran that it was called.
func coreNeverRuns(ran *atomic.Bool) groupconc.Task[int] {
	return func(context.Context) (int, error) {
		ran.Store(true)
		return -1, nil
	}
}

// corePoll waits for ctx to end the way a function that never selects on
// Done does, by polling Err on the fake clock, and then reports whether Done
// is closed too, as the context.Context contract requires once Err is set.
func corePoll(ctx context.Context) (doneClosed bool) {
	for ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// coreAllLayersPolicy gives every layer a semaphore and every queue a
// threshold: global in-flight 4 (queue 2), and per group bulkhead 3,
// concurrency 2, queue 2.
func coreAllLayersPolicy(t *testing.T) *groupconc.GroupPolicy {
	return coreBuild(t, groupconc.NewPolicyBuilder().
		GlobalMaxInFlight(4).GlobalQueueThreshold(2).
		DefaultMaxInFlightPerGroup(3).DefaultMaxConcurrencyPerGroup(2).
		DefaultQueueThresholdPerGroup(2))
}

// coreFullBatch submits 7 gated tasks to key under coreAllLayersPolicy and
// checks they fill every layer exactly: 2 run, 1 waits for concurrency and
// 1 for the bulkhead (both group queue slots), 2 wait for a global permit
// (both global queue slots), and the 7th is rejected. A permit or slot
// leaked earlier changes that shape. Then it lets them finish and checks
// every semaphore is whole again. Call it inside a bubble.
func coreFullBatch(t *testing.T, e *groupconc.GroupExecutor, key string) {
	t.Helper()
	gate := make(chan struct{})
	var running coreGauge
	hs := make([]*groupconc.TaskHandle[int], 7)
	for i := range hs {
		hs[i] = coreSubmit(t, t.Context(), e, key, fmt.Sprintf("batch-%d", i), coreGated(gate, i, &running))
		synctest.Wait()
	}
	assert.EqualValues(t, 2, running.cur.Load(), "running tasks of the batch")
	gs, ok := e.GroupStats(key)
	require.True(t, ok)
	assert.Equal(t, 2, gs.Running, "GroupStats.Running")
	assert.Equal(t, 3, gs.InFlight, "GroupStats.InFlight (bulkhead 3)")
	assert.Equal(t, 4, gs.Waiting, "GroupStats.Waiting")
	assert.Equal(t, 4, e.Stats().GlobalInFlight, "Stats.GlobalInFlight (global cap 4)")
	for i, h := range hs[:6] {
		assert.False(t, h.IsDone(), "batch task %d done before its gate opened", i)
	}
	require.True(t, hs[6].IsDone(), "7th batch task should be rejected by the full global queue")
	r := hs[6].Wait()
	assert.Equal(t, groupconc.StatusRejected, r.Status)
	var rej *groupconc.RejectedError
	assert.ErrorAs(t, r.Err, &rej)

	close(gate)
	for i, h := range hs[:6] {
		r := h.Wait()
		if i >= 4 && r.Status == groupconc.StatusRejected {
			// Once the gate opens, a task that got its global permit may
			// find both group queue slots still held by the tasks ahead of
			// it (they keep them until they hold concurrency): it is then
			// rightly rejected at the group layer.
			continue
		}
		assert.Equal(t, groupconc.StatusSuccess, r.Status, "batch task %d: %v", i, r.Err)
		assert.Equal(t, i, r.Value)
	}
	assert.EqualValues(t, 2, running.max.Load(), "most batch tasks running at once")
	synctest.Wait()
	assert.NoError(t, e.Quiescent())
}

// ---------------------------------------------------------------------------
// Limits of the three layers

func TestGroupConcurrencyLimitRunsExactlyTheLimitAndNeverMore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := coreBuild(t, groupconc.NewPolicyBuilder().PerGroupMaxConcurrency(map[string]int{"a": 3, "b": 2}))
		e := groupconc.New(p)
		defer e.Close()
		gate := make(chan struct{})
		gauges := map[string]*coreGauge{"a": {}, "b": {}}
		hs := coreSubmitRounds(t, e, gate, time.Second, 10, []string{"a", "b"}, func(key string) []*coreGauge { return []*coreGauge{gauges[key]} })
		synctest.Wait()
		assert.EqualValues(t, 3, gauges["a"].cur.Load(), "group a (limit 3) running with 10 waiting")
		assert.EqualValues(t, 2, gauges["b"].cur.Load(), "group b (limit 2) running with 10 waiting")

		start := time.Now()
		coreOpenGate(t, gate, hs, "gated")
		assert.EqualValues(t, 3, gauges["a"].max.Load(), "most group a tasks at once")
		assert.EqualValues(t, 2, gauges["b"].max.Load(), "most group b tasks at once")
		// a needs 4 waves of 1s, b 5: the groups ran side by side.
		assert.Equal(t, 5*time.Second, time.Since(start), "time for both groups")
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
	})
}

func TestGlobalMaxInFlightRunsExactlyTheCapAcrossGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := coreBuild(t, groupconc.NewPolicyBuilder().GlobalMaxInFlight(3).DefaultMaxConcurrencyPerGroup(5))
		e := groupconc.New(p)
		defer e.Close()
		gate := make(chan struct{})
		var all coreGauge
		hs := coreSubmitRounds(t, e, gate, time.Second, 4, []string{"a", "b", "c"}, func(string) []*coreGauge { return []*coreGauge{&all} })
		synctest.Wait()
		assert.EqualValues(t, 3, all.cur.Load(), "tasks running under global cap 3 with 12 submitted")
		s := e.Stats()
		assert.Equal(t, 3, s.GlobalInFlight, "Stats.GlobalInFlight")
		assert.Equal(t, 3, s.GlobalMaxInFlight, "Stats.GlobalMaxInFlight")
		assert.Equal(t, 3, s.Running, "Stats.Running")
		assert.Equal(t, 9, s.Waiting, "Stats.Waiting")

		coreOpenGate(t, gate, hs, "gated")
		assert.EqualValues(t, 3, all.max.Load(), "most tasks running at once")
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
	})
}

func TestBulkheadRunsExactlyItsLimitBelowTheConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := coreBuild(t, groupconc.NewPolicyBuilder().
			DefaultMaxConcurrencyPerGroup(5).
			DefaultMaxInFlightPerGroup(2).
			PerGroupMaxInFlight(map[string]int{"b": 1}))
		e := groupconc.New(p)
		defer e.Close()
		gate := make(chan struct{})
		gauges := map[string]*coreGauge{"a": {}, "b": {}}
		hs := coreSubmitRounds(t, e, gate, time.Second, 5, []string{"a", "b"}, func(key string) []*coreGauge { return []*coreGauge{gauges[key]} })
		synctest.Wait()
		assert.EqualValues(t, 2, gauges["a"].cur.Load(), "group a running (bulkhead 2, concurrency 5)")
		assert.EqualValues(t, 1, gauges["b"].cur.Load(), "group b running (bulkhead 1, concurrency 5)")
		ga, ok := e.GroupStats("a")
		require.True(t, ok)
		assert.Equal(t, groupconc.GroupStats{
			GroupKey: "a", Running: 2, Waiting: 3, InFlight: 2,
			MaxConcurrency: 5, MaxInFlight: 2, QueueThreshold: groupconc.Unlimited, Weight: 1,
		}, ga)

		coreOpenGate(t, gate, hs, "gated")
		assert.EqualValues(t, 2, gauges["a"].max.Load(), "most group a tasks at once")
		assert.EqualValues(t, 1, gauges["b"].max.Load(), "most group b tasks at once")
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
	})
}

func TestUnlimitedConcurrencyRunsEveryTaskAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(coreBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(groupconc.Unlimited)))
		defer e.Close()
		gate := make(chan struct{})
		var g coreGauge
		var hs []*groupconc.TaskHandle[int]
		for i := range 50 {
			hs = append(hs, coreSubmit(t, t.Context(), e, "g", fmt.Sprint(i), coreGated(gate, i, &g)))
		}
		synctest.Wait()
		assert.EqualValues(t, 50, g.cur.Load(), "tasks running in an Unlimited group")
		gs, ok := e.GroupStats("g")
		require.True(t, ok)
		assert.Equal(t, groupconc.Unlimited, gs.MaxConcurrency)
		assert.Equal(t, 50, gs.Running)
		coreOpenGate(t, gate, hs, "gated")
	})
}

// ---------------------------------------------------------------------------
// Submit

func TestSubmitRejectsAnInvalidTaskNamingTheField(t *testing.T) {
	ok := func(context.Context) (int, error) { return 1, nil }
	cases := []struct {
		name, key, id string
		task          groupconc.Task[int]
		field         string
	}{
		{"empty group key", "", "t", ok, "GroupKey"},
		{"empty task ID", "g", "", ok, "TaskID"},
		{"nil task", "g", "t", nil, "Task"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := groupconc.New(nil)
			defer e.Close()
			h, err := groupconc.Submit(t.Context(), e, c.key, c.id, c.task)
			assert.Nil(t, h)
			require.ErrorIs(t, err, groupconc.ErrInvalidTask)
			assert.Regexp(t, `\b`+c.field+`\b`, err.Error(), "error should name the field")
			assert.Zero(t, e.Stats().Submitted, "Stats.Submitted")
		})
	}
}

func TestSubmitAfterShutdownOrCloseReturnsErrClosed(t *testing.T) {
	stops := map[string]func(e *groupconc.GroupExecutor) error{
		"Shutdown": func(e *groupconc.GroupExecutor) error { return e.Shutdown(context.Background()) },
		"Close":    func(e *groupconc.GroupExecutor) error { return e.Close() },
	}
	for name, stop := range stops {
		t.Run(name, func(t *testing.T) {
			e := groupconc.New(nil)
			require.NoError(t, stop(e))
			var ran atomic.Bool
			h, err := groupconc.Submit(t.Context(), e, "g", "t", coreNeverRuns(&ran))
			assert.Nil(t, h)
			assert.ErrorIs(t, err, groupconc.ErrClosed)
			assert.False(t, ran.Load(), "task ran after %s", name)
			assert.Zero(t, e.Stats().Submitted, "Stats.Submitted")
		})
	}
}

func TestSubmitNeverBlocksOnPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(coreBuild(t, groupconc.NewPolicyBuilder().GlobalMaxInFlight(1)))
		defer e.Close()
		gate := make(chan struct{})
		hs := make([]*groupconc.TaskHandle[int], 100)
		// If Submit waited for a permit, the bubble would deadlock here.
		for i := range hs {
			hs[i] = coreSubmit(t, t.Context(), e, "g", fmt.Sprint(i), coreGated(gate, i))
		}
		synctest.Wait()
		gs, ok := e.GroupStats("g")
		require.True(t, ok)
		assert.Equal(t, 1, gs.Running)
		assert.Equal(t, 99, gs.Waiting)
		close(gate)
		for i, h := range hs {
			r := h.Wait()
			assert.Equal(t, groupconc.StatusSuccess, r.Status)
			assert.Equal(t, i, r.Value)
		}
	})
}

func TestSubmitTaskContextCarriesCallerValuesDeadlineAndCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		deadline := time.Now().Add(time.Hour)
		ctx, cancel := context.WithDeadline(context.WithValue(t.Context(), coreCtxKey{}, "tenant-7"), deadline)
		defer cancel()
		var (
			value       any
			gotDeadline time.Time
			hasDeadline bool
			sawCancel   atomic.Bool
		)
		h := coreSubmit(t, ctx, e, "g", "t", func(ctx context.Context) (int, error) {
			value = ctx.Value(coreCtxKey{})
			gotDeadline, hasDeadline = ctx.Deadline()
			<-ctx.Done()
			sawCancel.Store(true)
			return 0, ctx.Err()
		})
		synctest.Wait()
		assert.False(t, sawCancel.Load(), "task context done before the caller's was cancelled")
		cancel()
		r := h.Wait()
		assert.True(t, sawCancel.Load(), "cancelling the caller's context should cancel the task")
		assert.Equal(t, "tenant-7", value, "value from the caller's context")
		assert.True(t, hasDeadline, "task context should carry the caller's deadline")
		assert.True(t, gotDeadline.Equal(deadline), "deadline %v, want %v", gotDeadline, deadline)
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.ErrorIs(t, r.Err, context.Canceled)
	})
}

// A context derived from one with a deadline reports DeadlineExceeded once
// that deadline passes (the context.Context contract); so must the task's.
func TestSubmitTaskContextEndsWithDeadlineExceededWhenTheCallerDeadlinePasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		var taskErr error
		h := coreSubmit(t, ctx, e, "g", "t", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			taskErr = ctx.Err()
			return 0, ctx.Err()
		})
		r := h.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.ErrorIs(t, taskErr, context.DeadlineExceeded, "task ctx.Err() after the caller's deadline")
		assert.ErrorIs(t, r.Err, context.DeadlineExceeded, "result Err after the caller's deadline")
	})
}

func TestSubmitWithADoneContextCompletesCancelledWithoutRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(coreAllLayersPolicy(t))
		defer e.Close()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		var ran atomic.Bool
		h := coreSubmit(t, ctx, e, "g", "t", coreNeverRuns(&ran))
		r := h.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.ErrorIs(t, r.Err, context.Canceled)
		synctest.Wait()
		assert.False(t, ran.Load(), "task ran with a done context")
		assert.NoError(t, e.Quiescent())
		coreFullBatch(t, e, "g")
	})
}

// ---------------------------------------------------------------------------
// Outcomes

func TestTaskOutcomeFollowsWhatTheFunctionReturns(t *testing.T) {
	type trigger func(e *groupconc.GroupExecutor, cancelCaller context.CancelFunc)
	var (
		none         trigger = func(*groupconc.GroupExecutor, context.CancelFunc) {}
		cancelCaller trigger = func(_ *groupconc.GroupExecutor, c context.CancelFunc) { c() }
		stopGroup    trigger = func(e *groupconc.GroupExecutor, _ context.CancelFunc) { e.ShutdownGroup("g") }
	)
	waitDone := func(ctx context.Context) { <-ctx.Done() }
	errDoneOpen := errors.New("Err set but Done still open")
	polled := func(ctx context.Context) (int, error) {
		if !corePoll(ctx) {
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
			fn:         func(context.Context) (int, error) { return 0, errCoreBoom },
			trigger:    none,
			wantStatus: groupconc.StatusFailed, wantErr: errCoreBoom,
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
			fn:         func(ctx context.Context) (int, error) { waitDone(ctx); return 0, errCoreBoom },
			trigger:    cancelCaller,
			wantStatus: groupconc.StatusFailed, wantErr: errCoreBoom,
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
				e := groupconc.New(nil)
				defer e.Close()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if c.timeout > 0 {
					ctx, cancel = context.WithTimeout(ctx, c.timeout)
					defer cancel()
				}
				h := coreSubmit(t, ctx, e, "g", "t", c.fn)
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
				if c.wantErr == errCoreBoom {
					assert.Equal(t, errCoreBoom, r.Err, "a task's own error is returned unwrapped")
				}
				synctest.Wait()
				assert.NoError(t, e.Quiescent())
			})
		})
	}
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
			fn:   func() { panic(errCoreBoom) },
			check: func(t *testing.T, pe *groupconc.PanicError) {
				assert.ErrorIs(t, pe, errCoreBoom, "errors.Is through *PanicError")
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
				e := groupconc.New(coreAllLayersPolicy(t))
				defer e.Close()
				gate := make(chan struct{})
				bad := make([]*groupconc.TaskHandle[int], 2)
				for i := range bad {
					bad[i] = coreSubmit(t, t.Context(), e, "g", fmt.Sprint("bad", i), func(context.Context) (int, error) {
						<-gate
						c.fn()
						return 1, nil
					})
				}
				// Queued behind the failing tasks: one waits for concurrency,
				// one for the bulkhead.
				nextGate := make(chan struct{})
				var next coreGauge
				var queued []*groupconc.TaskHandle[int]
				for i := range 2 {
					queued = append(queued, coreSubmit(t, t.Context(), e, "g", fmt.Sprint("next", i), coreGated(nextGate, i, &next)))
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
				coreOpenGate(t, nextGate, queued, "queued")
				synctest.Wait()
				assert.NoError(t, e.Quiescent())
				assert.Equal(t, uint64(2), e.Stats().Failed, "Stats.Failed")
				coreFullBatch(t, e, "g")
			})
		})
	}
}

// ---------------------------------------------------------------------------
// Release before completion

func TestPermitsAreReleasedBeforeTheHandleCompletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every layer limited to 1 and no task may wait: a task submitted
		// while any permit of the previous one is still held is rejected.
		p := coreBuild(t, groupconc.NewPolicyBuilder().
			GlobalMaxInFlight(1).GlobalQueueThreshold(0).
			DefaultMaxInFlightPerGroup(1).DefaultMaxConcurrencyPerGroup(1).
			DefaultQueueThresholdPerGroup(0))
		e := groupconc.New(p)
		defer e.Close()
		var ran atomic.Int64
		submit := func(i int) *groupconc.TaskHandle[int] {
			return coreSubmit(t, t.Context(), e, "g", fmt.Sprint(i), func(context.Context) (int, error) {
				ran.Add(1)
				return i, nil
			})
		}
		const n = 300
		h := submit(0)
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
				next = submit(i)
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
		h1 := coreSubmit(t, t.Context(), e, "h", "1", coreGated(gate, 1))
		synctest.Wait()
		close(gate)
		require.Equal(t, groupconc.StatusSuccess, h1.Wait().Status)
		gs, ok := e.GroupStats("h")
		require.True(t, ok)
		assert.Zero(t, gs.Running, "GroupStats.Running right after task 1 completed")
		h2 := coreSubmit(t, t.Context(), e, "h", "2", func(context.Context) (int, error) { return 2, nil })
		r2 := h2.Wait()
		assert.Equal(t, groupconc.StatusSuccess, r2.Status, "task 2 after task 1: %v", r2.Err)
	})
}

// ---------------------------------------------------------------------------
// Cancellation of waiting tasks, by every route

func TestWaitingTaskCancelledByAnyRouteEndsCancelledAndLeavesEveryPermit(t *testing.T) {
	type route func(t *testing.T, e *groupconc.GroupExecutor, waiting []*groupconc.TaskHandle[int], cancels []context.CancelFunc)
	routes := []struct {
		name   string
		cancel route
		closes bool
	}{
		{"handle Cancel", func(t *testing.T, _ *groupconc.GroupExecutor, waiting []*groupconc.TaskHandle[int], _ []context.CancelFunc) {
			for _, h := range waiting {
				assert.True(t, h.Cancel(), "Cancel of a waiting task")
			}
		}, false},
		{"caller context", func(_ *testing.T, _ *groupconc.GroupExecutor, _ []*groupconc.TaskHandle[int], cancels []context.CancelFunc) {
			for _, c := range cancels {
				c()
			}
		}, false},
		{"ShutdownGroup", func(_ *testing.T, e *groupconc.GroupExecutor, _ []*groupconc.TaskHandle[int], _ []context.CancelFunc) {
			e.ShutdownGroup("g")
		}, false},
		{"EvictGroup", func(_ *testing.T, e *groupconc.GroupExecutor, _ []*groupconc.TaskHandle[int], _ []context.CancelFunc) {
			e.EvictGroup("g")
		}, false},
		{"Close", func(t *testing.T, e *groupconc.GroupExecutor, _ []*groupconc.TaskHandle[int], _ []context.CancelFunc) {
			assert.NoError(t, e.Close())
		}, true},
	}
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := groupconc.New(coreAllLayersPolicy(t))
				defer e.Close()
				gate := make(chan struct{})
				running := []*groupconc.TaskHandle[int]{
					coreSubmit(t, t.Context(), e, "g", "run0", coreGated(gate, 0)),
					coreSubmit(t, t.Context(), e, "g", "run1", coreGated(gate, 1)),
				}
				synctest.Wait()
				// wait0 waits for concurrency, wait1 for the bulkhead, wait2
				// and wait3 for a global permit.
				var (
					waiting []*groupconc.TaskHandle[int]
					cancels []context.CancelFunc
					ran     [4]atomic.Bool
				)
				for i := range 4 {
					ctx, cancel := context.WithCancel(t.Context())
					defer cancel()
					cancels = append(cancels, cancel)
					waiting = append(waiting, coreSubmit(t, ctx, e, "g", fmt.Sprint("wait", i), coreNeverRuns(&ran[i])))
					synctest.Wait()
				}
				gs, ok := e.GroupStats("g")
				require.True(t, ok)
				require.Equal(t, 2, gs.Running, "precondition: running")
				require.Equal(t, 3, gs.InFlight, "precondition: past the bulkhead")
				require.Equal(t, 4, gs.Waiting, "precondition: waiting")
				require.Equal(t, 4, e.Stats().GlobalInFlight, "precondition: global in flight")

				rt.cancel(t, e, waiting, cancels)
				synctest.Wait()
				for i, h := range waiting {
					require.True(t, h.IsDone(), "waiting task %d not completed", i)
					r := h.Wait()
					assert.Equal(t, groupconc.StatusCancelled, r.Status, "waiting task %d", i)
					assert.ErrorIs(t, r.Err, context.Canceled, "waiting task %d", i)
					assert.False(t, ran[i].Load(), "cancelled waiting task %d ran", i)
				}
				for i, h := range running {
					assert.False(t, h.IsDone(), "running task %d completed before its function returned", i)
				}
				coreOpenGate(t, gate, running, "running")
				synctest.Wait()
				assert.NoError(t, e.Quiescent())
				s := e.Stats()
				assert.Zero(t, s.GlobalInFlight, "Stats.GlobalInFlight")
				assert.Zero(t, s.Running, "Stats.Running")
				assert.Zero(t, s.Waiting, "Stats.Waiting")
				assert.Equal(t, uint64(6), s.Submitted, "Stats.Submitted")
				assert.Equal(t, uint64(4), s.Cancelled, "Stats.Cancelled")
				assert.Equal(t, uint64(2), s.Succeeded, "Stats.Succeeded")

				if rt.closes {
					_, err := groupconc.Submit(t.Context(), e, "g", "late", coreGated(nil, 0))
					assert.ErrorIs(t, err, groupconc.ErrClosed)
					return
				}
				coreFullBatch(t, e, "g")
			})
		})
	}
}

// ---------------------------------------------------------------------------
// TaskHandle

func TestCancelCompletesTheHandleAtOnceWhileTheFunctionKeepsItsPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		defer e.Close()
		gate := make(chan struct{})
		var (
			cause      error
			doneClosed bool
		)
		sawCancel := make(chan struct{})
		h1 := coreSubmit(t, t.Context(), e, "g", "1", func(ctx context.Context) (int, error) {
			doneClosed = corePoll(ctx)
			cause = context.Cause(ctx)
			close(sawCancel)
			<-gate
			return 1, nil
		})
		var ran2 atomic.Bool
		h2 := coreSubmit(t, t.Context(), e, "g", "2", func(context.Context) (int, error) {
			ran2.Store(true)
			return 2, nil
		})
		synctest.Wait()
		require.False(t, h1.IsDone())

		assert.True(t, h1.Cancel(), "Cancel of a running task")
		assert.True(t, h1.IsDone(), "handle complete as soon as Cancel returns")
		r := h1.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.Equal(t, context.Canceled, r.Err)
		assert.False(t, h1.Cancel(), "second Cancel")

		<-sawCancel
		synctest.Wait()
		assert.Equal(t, context.Canceled, cause, "context.Cause seen by the cancelled function")
		assert.True(t, doneClosed, "Done closed once Err reports the cancel")
		gs, ok := e.GroupStats("g")
		require.True(t, ok)
		assert.Equal(t, 1, gs.Running, "the cancelled function still holds its permit")
		assert.False(t, ran2.Load(), "next task started while the cancelled function still runs")

		close(gate)
		r2 := h2.Wait()
		assert.Equal(t, groupconc.StatusSuccess, r2.Status)
		assert.True(t, ran2.Load())
		assert.Equal(t, groupconc.StatusCancelled, h1.Wait().Status, "result never overwritten by the function's return")
		assert.False(t, h2.Cancel(), "Cancel of a completed task")
		assert.Equal(t, groupconc.StatusSuccess, h2.Wait().Status)
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
	})
}

func TestCancelReportsWhetherItCompletedTheHandle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(coreBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(4)))
		defer e.Close()
		const n = 200
		hs := make([]*groupconc.TaskHandle[int], n)
		won := make([]bool, n)
		for i := range hs {
			hs[i] = coreSubmit(t, t.Context(), e, fmt.Sprint("g", i%3), fmt.Sprint(i), func(context.Context) (int, error) {
				return i, nil
			})
			if i%2 == 0 {
				won[i] = hs[i].Cancel() // races the task's own completion
			}
		}
		synctest.Wait()
		var cancelled uint64
		for i, h := range hs {
			if i%2 == 1 {
				won[i] = h.Cancel() // after completion: must lose
				assert.False(t, won[i], "Cancel of completed task %d", i)
			}
			r := h.Wait()
			if won[i] {
				cancelled++
				assert.Equal(t, groupconc.StatusCancelled, r.Status, "task %d whose Cancel returned true", i)
				assert.Equal(t, context.Canceled, r.Err)
			} else {
				assert.Equal(t, groupconc.StatusSuccess, r.Status, "task %d whose Cancel returned false", i)
				assert.Equal(t, i, r.Value)
			}
		}
		s := e.Stats()
		assert.Equal(t, cancelled, s.Cancelled, "Stats.Cancelled")
		assert.Equal(t, uint64(n)-cancelled, s.Succeeded, "Stats.Succeeded")
		assert.NoError(t, e.Quiescent())
	})
}

func TestAwaitWithAnExpiringContextReturnsCancelledAndTheTaskGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		gate := make(chan struct{})
		h := coreSubmit(t, t.Context(), e, "g", "t", func(ctx context.Context) (int, error) {
			<-gate
			return 7, ctx.Err()
		})
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		start := time.Now()
		r, err := h.Await(ctx)
		assert.Equal(t, 3*time.Second, time.Since(start), "Await returned after")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.Equal(t, context.DeadlineExceeded, r.Err)
		assert.Equal(t, "g", r.GroupKey)
		assert.Equal(t, "t", r.TaskID)

		synctest.Wait()
		assert.False(t, h.IsDone(), "the task goes on after Await gave up")
		close(gate)
		r, err = h.Await(t.Context())
		assert.NoError(t, err)
		assert.Equal(t, groupconc.StatusSuccess, r.Status, "the task's real result: %v", r.Err)
		assert.Equal(t, 7, r.Value)
	})
}

func TestAwaitReturnsAnErrorOnlyForAnAbortRejection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(coreBuild(t, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0)))
		defer e.Close()
		failed := coreSubmit(t, t.Context(), e, "f", "t", func(context.Context) (int, error) { return 0, errCoreBoom })
		r, err := failed.Await(t.Context())
		assert.NoError(t, err, "Await error for a FAILED task")
		assert.Equal(t, groupconc.StatusFailed, r.Status)
		assert.Equal(t, errCoreBoom, r.Err)

		gate := make(chan struct{})
		blocker := coreSubmit(t, t.Context(), e, "g", "blocker", coreGated(gate, 0))
		rejected := coreSubmit(t, t.Context(), e, "g", "rejected", coreGated(gate, 1))
		r, err = rejected.Await(t.Context())
		var rej *groupconc.RejectedError
		assert.ErrorAs(t, err, &rej, "Await error under RejectAbort")
		assert.ErrorIs(t, err, groupconc.ErrRejected)
		assert.Equal(t, groupconc.StatusRejected, r.Status)
		assert.ErrorAs(t, r.Err, &rej)
		close(gate)
		r, err = blocker.Await(t.Context())
		assert.NoError(t, err)
		assert.Equal(t, groupconc.StatusSuccess, r.Status)
	})
}

func TestHandleDoneClosesOnCompletionAndEveryWaiterSeesOneResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		gate := make(chan struct{})
		h := coreSubmit(t, t.Context(), e, "grp", "id-1", coreGated(gate, 9))
		assert.Equal(t, "grp", h.GroupKey())
		assert.Equal(t, "id-1", h.TaskID())
		results := make(chan groupconc.GroupResult[int], 6)
		for range 3 {
			go func() { results <- h.Wait() }()
			go func() {
				r, err := h.Await(context.Background())
				assert.NoError(t, err)
				results <- r
			}()
		}
		synctest.Wait()
		select {
		case <-h.Done():
			t.Fatal("Done closed before the task completed")
		default:
		}
		assert.False(t, h.IsDone())
		assert.Empty(t, results, "a waiter returned before completion")

		start := time.Now()
		time.Sleep(time.Second)
		close(gate)
		<-h.Done()
		assert.True(t, h.IsDone())
		first := h.Wait()
		assert.Equal(t, groupconc.StatusSuccess, first.Status)
		assert.Equal(t, 9, first.Value)
		assert.Equal(t, time.Second, first.QueueWait()+first.Duration(), "queue wait plus run time")
		assert.Equal(t, time.Second, first.End.Sub(start), "End after the gate opened")
		for range 6 {
			assert.Equal(t, first, <-results)
		}
	})
}

// ---------------------------------------------------------------------------
// ExecuteAll

func TestExecuteAllReturnsResultsInInputOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(coreBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(3)))
		defer e.Close()
		const n = 12
		tasks := make([]groupconc.GroupTask[int], n)
		for i := range tasks {
			tasks[i] = groupconc.GroupTask[int]{
				GroupKey: fmt.Sprint("g", i%3),
				TaskID:   fmt.Sprint("t", i),
				Task: func(context.Context) (int, error) {
					time.Sleep(time.Duration(n-i) * time.Second) // later tasks finish first
					return i * 10, nil
				},
			}
		}
		results, err := groupconc.ExecuteAll(t.Context(), e, tasks)
		require.NoError(t, err)
		require.Len(t, results, n)
		for i, r := range results {
			assert.Equal(t, tasks[i].GroupKey, r.GroupKey, "results[%d]", i)
			assert.Equal(t, tasks[i].TaskID, r.TaskID, "results[%d]", i)
			assert.Equal(t, groupconc.StatusSuccess, r.Status, "results[%d]", i)
			assert.Equal(t, i*10, r.Value, "results[%d]", i)
		}
	})
}

func TestExecuteAllOfNoTasksReturnsNoResults(t *testing.T) {
	e := groupconc.New(nil)
	defer e.Close()
	results, err := groupconc.ExecuteAll[int](t.Context(), e, nil)
	assert.NoError(t, err)
	assert.Empty(t, results)
}

func TestExecuteAllDoesNotStopAtTheFirstFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		defer e.Close()
		var ran atomic.Int32
		ok := func(context.Context) (int, error) { ran.Add(1); return 1, nil }
		tasks := []groupconc.GroupTask[int]{
			{GroupKey: "g", TaskID: "fail", Task: func(context.Context) (int, error) { ran.Add(1); return 0, errCoreBoom }},
			{GroupKey: "g", TaskID: "ok1", Task: ok},
			{GroupKey: "g", TaskID: "panic", Task: func(context.Context) (int, error) { ran.Add(1); panic("x") }},
			{GroupKey: "h", TaskID: "ok2", Task: ok},
			{GroupKey: "g", TaskID: "ok3", Task: ok},
		}
		results, err := groupconc.ExecuteAll(t.Context(), e, tasks)
		require.NoError(t, err, "ExecuteAll error: failures belong in the results")
		require.Len(t, results, len(tasks))
		assert.EqualValues(t, len(tasks), ran.Load(), "tasks run")
		want := []groupconc.TaskStatus{
			groupconc.StatusFailed, groupconc.StatusSuccess, groupconc.StatusFailed,
			groupconc.StatusSuccess, groupconc.StatusSuccess,
		}
		for i, r := range results {
			assert.Equal(t, want[i], r.Status, "results[%d] (%s)", i, r.TaskID)
		}
		assert.Equal(t, errCoreBoom, results[0].Err)
		var pe *groupconc.PanicError
		assert.ErrorAs(t, results[2].Err, &pe)
	})
}

func TestExecuteAllValidatesEveryTaskBeforeSubmittingAny(t *testing.T) {
	cases := []struct {
		name  string
		bad   groupconc.GroupTask[int]
		field string
	}{
		{"empty group key", groupconc.GroupTask[int]{TaskID: "t", Task: func(context.Context) (int, error) { return 0, nil }}, "GroupKey"},
		{"empty task ID", groupconc.GroupTask[int]{GroupKey: "g", Task: func(context.Context) (int, error) { return 0, nil }}, "TaskID"},
		{"nil task", groupconc.GroupTask[int]{GroupKey: "g", TaskID: "t"}, "Task"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := groupconc.New(nil)
				defer e.Close()
				var ran atomic.Int32
				ok := func(context.Context) (int, error) { ran.Add(1); return 1, nil }
				tasks := []groupconc.GroupTask[int]{
					{GroupKey: "g", TaskID: "a", Task: ok},
					{GroupKey: "h", TaskID: "b", Task: ok},
					c.bad,
					{GroupKey: "g", TaskID: "c", Task: ok},
				}
				results, err := groupconc.ExecuteAll(t.Context(), e, tasks)
				require.ErrorIs(t, err, groupconc.ErrInvalidTask)
				assert.Regexp(t, `\b`+c.field+`\b`, err.Error(), "error should name the field")
				assert.Nil(t, results)
				synctest.Wait()
				assert.Zero(t, e.Stats().Submitted, "Stats.Submitted after a rejected batch")
				assert.Zero(t, e.Stats().Groups, "Stats.Groups after a rejected batch")
				assert.Zero(t, ran.Load(), "tasks run from a rejected batch")
			})
		})
	}
}

func TestExecuteAllContextEndingMidwayCancelsUnfinishedAndKeepsFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		defer e.Close()
		gate := make(chan struct{})
		defer close(gate)
		var queuedRan atomic.Bool
		tasks := []groupconc.GroupTask[int]{
			{GroupKey: "a", TaskID: "quick", Task: func(context.Context) (int, error) {
				time.Sleep(time.Second)
				return 1, nil
			}},
			{GroupKey: "b", TaskID: "stuck", Task: coreGated(gate, 2)}, // ignores its context
			{GroupKey: "b", TaskID: "queued", Task: coreNeverRuns(&queuedRan)},
			{GroupKey: "c", TaskID: "fails", Task: func(context.Context) (int, error) {
				time.Sleep(time.Second / 2)
				return 0, errCoreBoom
			}},
		}
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		start := time.Now()
		results, err := groupconc.ExecuteAll(ctx, e, tasks)
		assert.Equal(t, 2*time.Second, time.Since(start), "ExecuteAll returned after")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		require.Len(t, results, len(tasks))
		assert.Equal(t, groupconc.StatusSuccess, results[0].Status, "finished task keeps its result")
		assert.Equal(t, 1, results[0].Value)
		assert.Equal(t, groupconc.StatusCancelled, results[1].Status, "running task")
		assert.Equal(t, groupconc.StatusCancelled, results[2].Status, "queued task")
		assert.Equal(t, groupconc.StatusFailed, results[3].Status, "finished task keeps its result")
		assert.Equal(t, errCoreBoom, results[3].Err)
		for i, r := range results {
			assert.Equal(t, tasks[i].TaskID, r.TaskID, "results[%d]", i)
		}
		synctest.Wait()
		assert.False(t, queuedRan.Load(), "queued task ran after ExecuteAll's context ended")
	})
}

func TestExecuteAllReportsAnAbortRejectionAsAResultNotAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := coreBuild(t, groupconc.NewPolicyBuilder().
			DefaultQueueThresholdPerGroup(0).RejectionPolicy(groupconc.RejectAbort))
		e := groupconc.New(p)
		defer e.Close()
		var ran atomic.Bool
		tasks := []groupconc.GroupTask[int]{
			{GroupKey: "g", TaskID: "first", Task: func(context.Context) (int, error) {
				time.Sleep(time.Second)
				return 1, nil
			}},
			{GroupKey: "g", TaskID: "second", Task: coreNeverRuns(&ran)},
		}
		results, err := groupconc.ExecuteAll(t.Context(), e, tasks)
		require.NoError(t, err)
		require.Len(t, results, 2)
		assert.Equal(t, groupconc.StatusSuccess, results[0].Status)
		assert.Equal(t, groupconc.StatusRejected, results[1].Status)
		var rej *groupconc.RejectedError
		assert.ErrorAs(t, results[1].Err, &rej)
		assert.False(t, ran.Load(), "rejected task ran")
	})
}

// ---------------------------------------------------------------------------
// Groups

func TestShutdownGroupCancelsOnlyThatGroupAndAcceptsLaterTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		defer e.Close()
		gate := make(chan struct{})
		gRunning := coreSubmit(t, t.Context(), e, "g", "running", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		})
		var queuedRan atomic.Bool
		gQueued := coreSubmit(t, t.Context(), e, "g", "queued", coreNeverRuns(&queuedRan))
		var otherCancelled atomic.Bool
		other := coreSubmit(t, t.Context(), e, "h", "other", func(ctx context.Context) (int, error) {
			select {
			case <-gate:
				return 3, nil
			case <-ctx.Done():
				otherCancelled.Store(true)
				return 0, ctx.Err()
			}
		})
		var otherQueuedRan atomic.Bool
		otherQueued := coreSubmit(t, t.Context(), e, "h", "queued", func(context.Context) (int, error) {
			otherQueuedRan.Store(true)
			return 4, nil
		})
		synctest.Wait()

		e.ShutdownGroup("unknown") // a group never used: nothing to do
		e.EvictGroup("unknown")
		_, ok := e.GroupStats("unknown")
		assert.False(t, ok, "ShutdownGroup or EvictGroup created an unknown group")
		assert.Equal(t, 2, e.Stats().Groups, "Stats.Groups")

		e.ShutdownGroup("g")
		synctest.Wait()
		assert.Equal(t, groupconc.StatusCancelled, gRunning.Wait().Status, "running task of the group")
		r := gQueued.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status, "waiting task of the group")
		assert.ErrorIs(t, r.Err, context.Canceled)
		assert.False(t, queuedRan.Load(), "cancelled waiting task ran")
		assert.False(t, other.IsDone(), "task of another group completed")
		assert.False(t, otherCancelled.Load(), "task of another group saw its context cancelled")
		assert.False(t, otherQueued.IsDone(), "waiting task of another group completed")

		later := coreSubmit(t, t.Context(), e, "g", "later", func(context.Context) (int, error) { return 5, nil })
		r = later.Wait()
		assert.Equal(t, groupconc.StatusSuccess, r.Status, "task submitted after ShutdownGroup: %v", r.Err)
		assert.Equal(t, 5, r.Value)
		gs, ok := e.GroupStats("g")
		assert.True(t, ok, "group known after ShutdownGroup")
		assert.Equal(t, 1, gs.MaxConcurrency)

		close(gate)
		assert.Equal(t, groupconc.StatusSuccess, other.Wait().Status)
		assert.Equal(t, groupconc.StatusSuccess, otherQueued.Wait().Status)
		assert.True(t, otherQueuedRan.Load())
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
	})
}

// The running tasks react to the cancel and release their permits at once,
// racing the cancel's spread to the waiting tasks: those must still end
// CANCELLED, never run.
func TestTasksWaitingWhenTheirGroupOrExecutorIsCancelledNeverRun(t *testing.T) {
	routes := []struct {
		name            string
		runKey, waitKey string // runners hold every permit the waiters need
		cancel          func(e *groupconc.GroupExecutor)
	}{
		{"ShutdownGroup", "g", "g", func(e *groupconc.GroupExecutor) { e.ShutdownGroup("g") }},
		{"EvictGroup", "g", "g", func(e *groupconc.GroupExecutor) { e.EvictGroup("g") }},
		{"Close", "g", "g", func(e *groupconc.GroupExecutor) { _ = e.Close() }},
		{"Close across groups", "a", "b", func(e *groupconc.GroupExecutor) { _ = e.Close() }},
	}
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			for range 25 { // the window is narrow: try it several times
				synctest.Test(t, func(t *testing.T) {
					e := groupconc.New(coreBuild(t, groupconc.NewPolicyBuilder().
						GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(4)))
					defer e.Close()
					var hs []*groupconc.TaskHandle[int]
					for i := range 4 {
						hs = append(hs, coreSubmit(t, t.Context(), e, rt.runKey, fmt.Sprint("run", i), func(ctx context.Context) (int, error) {
							<-ctx.Done()
							return 0, ctx.Err()
						}))
					}
					var ran atomic.Int32
					for i := range 12 {
						hs = append(hs, coreSubmit(t, t.Context(), e, rt.waitKey, fmt.Sprint("wait", i), func(context.Context) (int, error) {
							ran.Add(1)
							return 1, nil
						}))
					}
					synctest.Wait()
					rt.cancel(e)
					for _, h := range hs {
						r := h.Wait()
						if !assert.Equal(t, groupconc.StatusCancelled, r.Status, "task %s: %v", h.TaskID(), r.Err) {
							break
						}
					}
					assert.Zero(t, ran.Load(), "waiting tasks that ran after %s", rt.name)
				})
				if t.Failed() {
					return
				}
			}
		})
	}
}

func TestEvictGroupCancelsItsTasksAndResolvesItsLimitsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		p := coreBuild(t, groupconc.NewPolicyBuilder().ConcurrencyResolver(func(key string) int {
			if calls.Add(1) == 1 {
				return 1
			}
			return 3
		}))
		e := groupconc.New(p)
		defer e.Close()
		running := coreSubmit(t, t.Context(), e, "g", "running", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		})
		var ran [2]atomic.Bool
		queued := []*groupconc.TaskHandle[int]{
			coreSubmit(t, t.Context(), e, "g", "q0", coreNeverRuns(&ran[0])),
			coreSubmit(t, t.Context(), e, "g", "q1", coreNeverRuns(&ran[1])),
		}
		synctest.Wait()
		assert.EqualValues(t, 1, calls.Load(), "resolver calls for one group: limits fixed on first use")
		gs, ok := e.GroupStats("g")
		require.True(t, ok)
		require.Equal(t, 1, gs.MaxConcurrency)

		e.EvictGroup("g")
		synctest.Wait()
		assert.Equal(t, groupconc.StatusCancelled, running.Wait().Status, "running task of the evicted group")
		for i, h := range queued {
			assert.Equal(t, groupconc.StatusCancelled, h.Wait().Status, "waiting task %d of the evicted group", i)
			assert.False(t, ran[i].Load(), "cancelled waiting task %d ran", i)
		}
		_, ok = e.GroupStats("g")
		assert.False(t, ok, "evicted group still in GroupStats")
		assert.Zero(t, e.Stats().Groups, "Stats.Groups after eviction")

		gate := make(chan struct{})
		var g coreGauge
		var hs []*groupconc.TaskHandle[int]
		for i := range 5 {
			hs = append(hs, coreSubmit(t, t.Context(), e, "g", fmt.Sprint(i), coreGated(gate, i, &g)))
		}
		synctest.Wait()
		assert.EqualValues(t, 2, calls.Load(), "resolver calls after eviction")
		gs, ok = e.GroupStats("g")
		require.True(t, ok)
		assert.Equal(t, 3, gs.MaxConcurrency, "limit of the group after eviction")
		assert.EqualValues(t, 3, g.cur.Load(), "tasks running under the re-resolved limit")
		coreOpenGate(t, gate, hs, "gated")
		assert.EqualValues(t, 3, g.max.Load())
		assert.EqualValues(t, 2, calls.Load(), "resolver calls")
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
	})
}

func TestEvictedGroupTasksReleaseIntoTheOldSemaphores(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := coreBuild(t, groupconc.NewPolicyBuilder().
			DefaultMaxConcurrencyPerGroup(2).DefaultMaxInFlightPerGroup(3).DefaultQueueThresholdPerGroup(5))
		e := groupconc.New(p)
		defer e.Close()
		oldGate := make(chan struct{})
		var oldG coreGauge
		var old []*groupconc.TaskHandle[int]
		for i := range 2 {
			old = append(old, coreSubmit(t, t.Context(), e, "g", fmt.Sprint("old", i), coreGated(oldGate, i, &oldG)))
		}
		synctest.Wait()
		require.EqualValues(t, 2, oldG.cur.Load())

		e.EvictGroup("g")
		newGate := make(chan struct{})
		var newG coreGauge
		var fresh []*groupconc.TaskHandle[int]
		for i := range 5 {
			fresh = append(fresh, coreSubmit(t, t.Context(), e, "g", fmt.Sprint("new", i), coreGated(newGate, i, &newG)))
		}
		synctest.Wait()
		assert.EqualValues(t, 2, newG.cur.Load(), "new group running beside the evicted one")
		assert.EqualValues(t, 2, oldG.cur.Load(), "evicted group's functions still running")

		// The old tasks return (their context was cancelled, but they ignore
		// it) and release their permits into the evicted group's semaphores.
		coreOpenGate(t, oldGate, old, "old")
		synctest.Wait()
		assert.EqualValues(t, 2, newG.cur.Load(), "new group running after the old tasks released")
		gs, ok := e.GroupStats("g")
		require.True(t, ok)
		assert.Equal(t, 2, gs.Running, "GroupStats.Running of the new group")
		assert.Equal(t, 3, gs.InFlight, "GroupStats.InFlight of the new group")
		assert.Equal(t, 3, gs.Waiting, "GroupStats.Waiting of the new group")

		coreOpenGate(t, newGate, fresh, "new")
		assert.EqualValues(t, 2, newG.max.Load(), "most new-group tasks at once")
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
	})
}

// ---------------------------------------------------------------------------
// Executor

func TestShutdownWaitsForWaitingAndRunningTasksAndReturnsNil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		gate := make(chan struct{})
		running := coreSubmit(t, t.Context(), e, "g", "running", coreGated(gate, 1))
		waiting := coreSubmit(t, t.Context(), e, "g", "waiting", func(context.Context) (int, error) {
			time.Sleep(time.Second)
			return 2, nil
		})
		synctest.Wait()

		var shutdownErr error
		var doneAtReturn [2]bool
		returned := make(chan struct{})
		go func() {
			shutdownErr = e.Shutdown(t.Context())
			doneAtReturn = [2]bool{running.IsDone(), waiting.IsDone()}
			close(returned)
		}()
		synctest.Wait()
		select {
		case <-returned:
			t.Fatal("Shutdown returned while tasks were still running")
		default:
		}
		_, err := groupconc.Submit(t.Context(), e, "g", "late", coreGated(nil, 0))
		assert.ErrorIs(t, err, groupconc.ErrClosed, "Submit during Shutdown")

		start := time.Now()
		close(gate)
		<-returned
		assert.Equal(t, time.Second, time.Since(start), "Shutdown returned after")
		assert.NoError(t, shutdownErr)
		assert.Equal(t, [2]bool{true, true}, doneAtReturn, "tasks complete when Shutdown returned")
		assert.Equal(t, groupconc.StatusSuccess, running.Wait().Status)
		r := waiting.Wait()
		assert.Equal(t, groupconc.StatusSuccess, r.Status, "waiting task should run to completion: %v", r.Err)
		assert.Equal(t, 2, r.Value)
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
	})
}

func TestShutdownWithAnExpiringContextReturnsAtTheDeadlineAndCancelsTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		quick := coreSubmit(t, t.Context(), e, "a", "quick", func(context.Context) (int, error) {
			time.Sleep(time.Second)
			return 1, nil
		})
		var cause error
		slow := coreSubmit(t, t.Context(), e, "b", "slow", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return 0, ctx.Err()
		})
		var queuedRan atomic.Bool
		queued := coreSubmit(t, t.Context(), e, "b", "queued", coreNeverRuns(&queuedRan))

		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		err := e.Shutdown(ctx)
		assert.Equal(t, 5*time.Second, time.Since(start), "Shutdown returned after")
		assert.ErrorIs(t, err, context.DeadlineExceeded)

		assert.Equal(t, groupconc.StatusSuccess, quick.Wait().Status, "task finished before the deadline")
		assert.Equal(t, groupconc.StatusCancelled, slow.Wait().Status, "running task at the deadline")
		r := queued.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status, "waiting task at the deadline")
		synctest.Wait()
		assert.Equal(t, groupconc.ErrClosed, cause, "context.Cause of a task cancelled by Shutdown")
		assert.False(t, queuedRan.Load(), "waiting task ran after Shutdown's deadline")
		assert.NoError(t, e.Quiescent())
	})
}

func TestCloseCancelsEverythingAndReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil) // concurrency 1
		gate := make(chan struct{})
		var cause error
		sawCancel := make(chan struct{})
		running := coreSubmit(t, t.Context(), e, "g", "running", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			cause = context.Cause(ctx)
			close(sawCancel)
			<-gate // keeps running after Close returns
			return 1, nil
		})
		var queuedRan atomic.Bool
		queued := coreSubmit(t, t.Context(), e, "g", "queued", coreNeverRuns(&queuedRan))
		// A function that polls Err instead of selecting on Done.
		var pollCause error
		poller := coreSubmit(t, t.Context(), e, "p", "poller", func(ctx context.Context) (int, error) {
			if !corePoll(ctx) {
				return 0, errors.New("Err set but Done still open")
			}
			pollCause = context.Cause(ctx)
			return 0, ctx.Err()
		})
		synctest.Wait()

		start := time.Now()
		assert.NoError(t, e.Close()) // would deadlock the bubble if it waited
		assert.Zero(t, time.Since(start))
		<-sawCancel
		assert.Equal(t, groupconc.ErrClosed, cause, "context.Cause of a task after Close")
		synctest.Wait()
		r := queued.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status, "waiting task after Close")
		assert.ErrorIs(t, r.Err, context.Canceled)
		assert.False(t, queuedRan.Load(), "waiting task ran after Close")
		assert.False(t, running.IsDone(), "running task completed before its function returned")
		r = poller.Wait()
		assert.Equal(t, groupconc.StatusCancelled, r.Status, "polling task after Close")
		assert.ErrorIs(t, r.Err, context.Canceled)
		assert.Equal(t, groupconc.ErrClosed, pollCause, "context.Cause seen by a polling task after Close")

		close(gate)
		assert.Equal(t, groupconc.StatusSuccess, running.Wait().Status)
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
		_, err := groupconc.Submit(t.Context(), e, "g", "late", coreGated(nil, 0))
		assert.ErrorIs(t, err, groupconc.ErrClosed)
	})
}

func TestCloseIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := groupconc.New(nil)
		h := coreSubmit(t, t.Context(), e, "g", "t", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		})
		synctest.Wait()
		for i := range 3 {
			assert.NoError(t, e.Close(), "Close call %d", i+1)
		}
		assert.Equal(t, groupconc.StatusCancelled, h.Wait().Status)
		synctest.Wait()
		assert.NoError(t, e.Close(), "Close after every task ended")
		assert.Equal(t, uint64(1), e.Stats().Cancelled, "Stats.Cancelled")

		e2 := groupconc.New(nil)
		require.NoError(t, e2.Shutdown(t.Context()))
		assert.NoError(t, e2.Close(), "Close after Shutdown")
		assert.NoError(t, e2.Close(), "second Close after Shutdown")
	})
}

// ---------------------------------------------------------------------------
// Policy

func TestBuildRejectsEachBadFieldByName(t *testing.T) {
	cases := []struct {
		field string
		set   func(b *groupconc.PolicyBuilder)
	}{
		{"PerGroupMaxConcurrency", func(b *groupconc.PolicyBuilder) { b.PerGroupMaxConcurrency(map[string]int{"a": 2, "b": 0}) }},
		{"PerGroupMaxConcurrency", func(b *groupconc.PolicyBuilder) { b.PerGroupMaxConcurrency(map[string]int{"a": -1}) }},
		{"DefaultMaxConcurrencyPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultMaxConcurrencyPerGroup(0) }},
		{"DefaultMaxConcurrencyPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultMaxConcurrencyPerGroup(-3) }},
		{"GlobalMaxInFlight", func(b *groupconc.PolicyBuilder) { b.GlobalMaxInFlight(0) }},
		{"GlobalMaxInFlight", func(b *groupconc.PolicyBuilder) { b.GlobalMaxInFlight(-1) }},
		{"DefaultMaxInFlightPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultMaxInFlightPerGroup(0) }},
		{"PerGroupMaxInFlight", func(b *groupconc.PolicyBuilder) { b.PerGroupMaxInFlight(map[string]int{"a": 0}) }},
		{"GlobalQueueThreshold", func(b *groupconc.PolicyBuilder) { b.GlobalQueueThreshold(-1) }},
		{"DefaultQueueThresholdPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultQueueThresholdPerGroup(-1) }},
		{"PerGroupQueueThreshold", func(b *groupconc.PolicyBuilder) { b.PerGroupQueueThreshold(map[string]int{"a": 0, "b": -2}) }},
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			b := groupconc.NewPolicyBuilder()
			c.set(b)
			p, err := b.Build()
			assert.Nil(t, p)
			require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
			assert.Regexp(t, `\b`+c.field+`\b`, err.Error(), "error should name the bad field")
			for _, other := range cases {
				if other.field != c.field {
					assert.NotRegexp(t, `\b`+other.field+`\b`, err.Error(), "error names a field that is fine")
				}
			}
		})
	}
}

func TestBuildNamesEveryBadFieldInOneError(t *testing.T) {
	_, err := groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(map[string]int{"a": 0}).
		DefaultMaxConcurrencyPerGroup(0).
		GlobalMaxInFlight(0).
		DefaultMaxInFlightPerGroup(0).
		PerGroupMaxInFlight(map[string]int{"a": 0}).
		GlobalQueueThreshold(-1).
		DefaultQueueThresholdPerGroup(-1).
		PerGroupQueueThreshold(map[string]int{"a": -1}).
		Build()
	require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
	for _, field := range []string{
		"PerGroupMaxConcurrency", "DefaultMaxConcurrencyPerGroup", "GlobalMaxInFlight",
		"DefaultMaxInFlightPerGroup", "PerGroupMaxInFlight", "GlobalQueueThreshold",
		"DefaultQueueThresholdPerGroup", "PerGroupQueueThreshold",
	} {
		assert.Regexp(t, `\b`+field+`\b`, err.Error())
	}
}

func TestBuildAcceptsTheSmallestValidValues(t *testing.T) {
	p, err := groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(map[string]int{"a": 1}).
		DefaultMaxConcurrencyPerGroup(1).
		GlobalMaxInFlight(1).
		DefaultMaxInFlightPerGroup(1).
		PerGroupMaxInFlight(map[string]int{"a": 1}).
		GlobalQueueThreshold(0).
		DefaultQueueThresholdPerGroup(0).
		PerGroupQueueThreshold(map[string]int{"a": 0}).
		Build()
	require.NoError(t, err)
	assert.Equal(t, 1, p.ResolveConcurrency("a"))
	assert.Equal(t, 1, p.ResolveMaxInFlight("a"))
	assert.Equal(t, 0, p.ResolveQueueThreshold("a"))
	assert.Equal(t, 1, p.GlobalMaxInFlight())
	assert.Equal(t, 0, p.GlobalQueueThreshold())
}

func TestPolicyKeepsItsOwnCopiesOfTheMaps(t *testing.T) {
	conc := map[string]int{"a": 2}
	inFlight := map[string]int{"a": 3}
	queue := map[string]int{"a": 4}
	b := groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(conc).PerGroupMaxInFlight(inFlight).PerGroupQueueThreshold(queue)
	// Changed after the setters: the builder must not see it.
	conc["a"], conc["b"] = 20, 0
	inFlight["a"], inFlight["b"] = 30, 0
	queue["a"], queue["b"] = 40, -1
	p, err := b.Build()
	require.NoError(t, err, "builder saw changes made to the maps after the setters")
	// Changed after Build: the policy must not see it.
	conc["a"], inFlight["a"], queue["a"] = 200, 300, 400
	conc["c"], inFlight["c"], queue["c"] = 5, 6, 7

	assert.Equal(t, 2, p.ResolveConcurrency("a"))
	assert.Equal(t, 3, p.ResolveMaxInFlight("a"))
	assert.Equal(t, 4, p.ResolveQueueThreshold("a"))
	assert.Equal(t, 1, p.ResolveConcurrency("c"), "default for a key added to the map later")
	assert.Equal(t, groupconc.Unlimited, p.ResolveMaxInFlight("c"))
	assert.Equal(t, groupconc.Unlimited, p.ResolveQueueThreshold("c"))

	// Reusing the builder after Build does not change the built policy.
	_, err = b.PerGroupMaxConcurrency(map[string]int{"a": 9}).Build()
	require.NoError(t, err)
	assert.Equal(t, 2, p.ResolveConcurrency("a"), "built policy changed by a later setter")
}

func TestResolveConcurrencyGoesMapThenResolverThenDefault(t *testing.T) {
	resolver := func(key string) int {
		switch key {
		case "panics":
			panic("resolver failed")
		case "zero":
			return 0
		case "negative":
			return -5
		}
		return 7
	}
	withAll := func() *groupconc.PolicyBuilder {
		return groupconc.NewPolicyBuilder().
			PerGroupMaxConcurrency(map[string]int{"mapped": 3, "panics": 2}).
			ConcurrencyResolver(resolver).
			DefaultMaxConcurrencyPerGroup(4)
	}
	cases := []struct {
		name    string
		builder *groupconc.PolicyBuilder
		key     string
		want    int
	}{
		{"map wins over resolver", withAll(), "mapped", 3},
		{"map wins over a resolver that would panic", withAll(), "panics", 2},
		{"resolver for an unmapped key", withAll(), "other", 7},
		{"resolver panic falls back to the default", groupconc.NewPolicyBuilder().ConcurrencyResolver(resolver).DefaultMaxConcurrencyPerGroup(4), "panics", 4},
		{"resolver panic falls back to 1 without a default", groupconc.NewPolicyBuilder().ConcurrencyResolver(resolver), "panics", 1},
		{"resolver 0 becomes 1", withAll(), "zero", 1},
		{"resolver negative becomes 1", withAll(), "negative", 1},
		{"default without resolver", groupconc.NewPolicyBuilder().PerGroupMaxConcurrency(map[string]int{"mapped": 3}).DefaultMaxConcurrencyPerGroup(4), "other", 4},
		{"map without resolver", groupconc.NewPolicyBuilder().PerGroupMaxConcurrency(map[string]int{"mapped": 3}).DefaultMaxConcurrencyPerGroup(4), "mapped", 3},
		{"1 with nothing set", groupconc.NewPolicyBuilder(), "other", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := coreBuild(t, c.builder)
			assert.Equal(t, c.want, p.ResolveConcurrency(c.key))
		})
	}
}

func TestResolveMaxInFlightAndQueueThresholdGoMapThenDefault(t *testing.T) {
	cases := []struct {
		name                   string
		builder                *groupconc.PolicyBuilder
		key                    string
		wantInFlight, wantQueu int
	}{
		{"nothing set", groupconc.NewPolicyBuilder(), "a", groupconc.Unlimited, groupconc.Unlimited},
		{"defaults", groupconc.NewPolicyBuilder().DefaultMaxInFlightPerGroup(5).DefaultQueueThresholdPerGroup(6), "a", 5, 6},
		{"map over defaults", groupconc.NewPolicyBuilder().
			DefaultMaxInFlightPerGroup(5).DefaultQueueThresholdPerGroup(6).
			PerGroupMaxInFlight(map[string]int{"a": 2}).PerGroupQueueThreshold(map[string]int{"a": 0}), "a", 2, 0},
		{"unmapped key gets defaults", groupconc.NewPolicyBuilder().
			DefaultMaxInFlightPerGroup(5).DefaultQueueThresholdPerGroup(6).
			PerGroupMaxInFlight(map[string]int{"a": 2}).PerGroupQueueThreshold(map[string]int{"a": 0}), "b", 5, 6},
		{"map without defaults", groupconc.NewPolicyBuilder().
			PerGroupMaxInFlight(map[string]int{"a": 2}).PerGroupQueueThreshold(map[string]int{"a": 1}), "a", 2, 1},
		{"resolver does not apply", groupconc.NewPolicyBuilder().
			ConcurrencyResolver(func(string) int { return 9 }), "a", groupconc.Unlimited, groupconc.Unlimited},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := coreBuild(t, c.builder)
			assert.Equal(t, c.wantInFlight, p.ResolveMaxInFlight(c.key), "ResolveMaxInFlight")
			assert.Equal(t, c.wantQueu, p.ResolveQueueThreshold(c.key), "ResolveQueueThreshold")
		})
	}
}

func TestDefaultPolicyValues(t *testing.T) {
	p := groupconc.DefaultPolicy()
	require.NotNil(t, p)
	assert.Equal(t, 1, p.ResolveConcurrency("any"), "ResolveConcurrency")
	assert.Equal(t, groupconc.Unlimited, p.ResolveMaxInFlight("any"), "ResolveMaxInFlight")
	assert.Equal(t, groupconc.Unlimited, p.ResolveQueueThreshold("any"), "ResolveQueueThreshold")
	assert.Equal(t, groupconc.Unlimited, p.GlobalMaxInFlight(), "GlobalMaxInFlight")
	assert.Equal(t, groupconc.Unlimited, p.GlobalQueueThreshold(), "GlobalQueueThreshold")
}

func TestZeroAndNilPolicyBehaveAsTheDefault(t *testing.T) {
	built, err := groupconc.NewPolicyBuilder().Build()
	require.NoError(t, err)
	zeroBuilt, err := new(groupconc.PolicyBuilder).Build()
	require.NoError(t, err)
	policies := []struct {
		name string
		p    *groupconc.GroupPolicy
	}{
		{"nil", nil},
		{"zero GroupPolicy", &groupconc.GroupPolicy{}},
		{"DefaultPolicy", groupconc.DefaultPolicy()},
		{"empty builder", built},
		{"zero PolicyBuilder", zeroBuilt},
	}
	for _, pc := range policies {
		t.Run(pc.name, func(t *testing.T) {
			p := pc.p
			assert.Equal(t, 1, p.ResolveConcurrency("g"), "ResolveConcurrency")
			assert.Equal(t, groupconc.Unlimited, p.ResolveMaxInFlight("g"), "ResolveMaxInFlight")
			assert.Equal(t, groupconc.Unlimited, p.ResolveQueueThreshold("g"), "ResolveQueueThreshold")
			assert.Equal(t, groupconc.Unlimited, p.GlobalMaxInFlight(), "GlobalMaxInFlight")
			assert.Equal(t, groupconc.Unlimited, p.GlobalQueueThreshold(), "GlobalQueueThreshold")

			synctest.Test(t, func(t *testing.T) {
				e := groupconc.New(p)
				defer e.Close()
				gate := make(chan struct{})
				var g coreGauge
				var hs []*groupconc.TaskHandle[int]
				for i := range 3 {
					hs = append(hs, coreSubmit(t, t.Context(), e, "g", fmt.Sprint(i), coreGated(gate, i, &g)))
				}
				synctest.Wait()
				assert.EqualValues(t, 1, g.cur.Load(), "tasks of one group running at once")
				gs, ok := e.GroupStats("g")
				require.True(t, ok)
				assert.Equal(t, groupconc.GroupStats{
					GroupKey: "g", Running: 1, Waiting: 2, InFlight: 3, // no bulkhead: all are past it
					MaxConcurrency: 1, MaxInFlight: groupconc.Unlimited, QueueThreshold: groupconc.Unlimited, Weight: 1,
				}, gs)
				assert.Equal(t, groupconc.Unlimited, e.Stats().GlobalMaxInFlight)
				coreOpenGate(t, gate, hs, "gated")
				assert.EqualValues(t, 1, g.max.Load())
			})
		})
	}
}
