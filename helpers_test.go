package groupconc_test

// The vocabulary the tests of this package share: building executors and
// policies, submitting, gated tasks and gauges, the listener recorder, and
// the env of the adversarial tests (a bubble-bound executor with the oracle).

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

var errBoom = errors.New("boom")

// gauge counts the tasks inside a section and remembers the highest count.
type gauge struct{ cur, max atomic.Int64 }

func (g *gauge) enter() {
	n := g.cur.Add(1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			return
		}
	}
}

func (g *gauge) exit() { g.cur.Add(-1) }

type ctxKey struct{}

// mustBuild builds b and fails the test if it is invalid.
func mustBuild(t *testing.T, b *groupconc.PolicyBuilder) *groupconc.GroupPolicy {
	t.Helper()
	p, err := b.Build()
	require.NoError(t, err)
	require.NotNil(t, p)
	return p
}

// submit submits task and fails the test if Submit refuses it.
func submit(t *testing.T, ctx context.Context, e *groupconc.GroupExecutor, key, id string, task groupconc.Task[int]) *groupconc.TaskHandle[int] {
	t.Helper()
	h, err := groupconc.Submit(ctx, e, key, id, task)
	require.NoError(t, err)
	require.NotNil(t, h)
	return h
}

// gated returns a task that stays inside every gauge until gate closes,
// ignoring its context, then returns v.
func gated(gate <-chan struct{}, v int, gauges ...*gauge) groupconc.Task[int] {
	return gatedWork(gate, 0, v, gauges...)
}

// gatedWork is gated whose task, once gate closes, works for work on
// the fake clock before it leaves its gauges.
func gatedWork(gate <-chan struct{}, work time.Duration, v int, gauges ...*gauge) groupconc.Task[int] {
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
			time.Sleep(work) // fake clock: the bubble's
		}
		return v, nil
	}
}

// submitRounds submits rounds tasks to each of keys in turn, task i of
// each key gated on gate (gatedWork, working for work after it) and
// returning i, counted in the gauges gaugesOf gives for its key.
func submitRounds(t *testing.T, e *groupconc.GroupExecutor, gate <-chan struct{}, work time.Duration, rounds int, keys []string, gaugesOf func(key string) []*gauge) []*groupconc.TaskHandle[int] {
	t.Helper()
	var hs []*groupconc.TaskHandle[int]
	for i := range rounds {
		for _, key := range keys {
			hs = append(hs, submit(t, t.Context(), e, key, fmt.Sprint(i), gatedWork(gate, work, i, gaugesOf(key)...)))
		}
	}
	return hs
}

// openGate closes gate and checks that every task in hs, named what in
// messages, then succeeds.
func openGate(t *testing.T, gate chan struct{}, hs []*groupconc.TaskHandle[int], what string) {
	t.Helper()
	close(gate)
	for i, h := range hs {
		assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, "%s task %d", what, i)
	}
}

// neverRuns returns a task that records in ran that it was called.
func neverRuns(ran *atomic.Bool) groupconc.Task[int] {
	return func(context.Context) (int, error) {
		ran.Store(true)
		return -1, nil
	}
}

// pollDone waits for ctx to end the way a function that never selects on
// Done does, by polling Err on the fake clock, and then reports whether Done
// is closed too, as the context.Context contract requires once Err is set.
func pollDone(ctx context.Context) (doneClosed bool) {
	for ctx.Err() == nil {
		time.Sleep(time.Millisecond) // fake clock: the bubble's
	}
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// allLayersPolicy gives every layer a limit and every queue a
// threshold: global in-flight 4 (queue 2), and per group bulkhead 3,
// concurrency 2, queue 2.
func allLayersPolicy(t *testing.T) *groupconc.GroupPolicy {
	return mustBuild(t, groupconc.NewPolicyBuilder().
		GlobalMaxInFlight(4).GlobalQueueThreshold(2).
		DefaultMaxInFlightPerGroup(3).DefaultMaxConcurrencyPerGroup(2).
		DefaultQueueThresholdPerGroup(2))
}

// fullBatch submits 7 gated tasks to key under allLayersPolicy and
// checks they fill every layer exactly: 2 run, 1 waits for concurrency and
// 1 for the bulkhead (both group queue slots), 2 wait for a global permit
// (both global queue slots), and the 7th is rejected. A permit or slot
// leaked earlier changes that shape. Then it lets them finish and checks
// every layer's permits are all back. Call it inside a bubble.
func fullBatch(t *testing.T, e *groupconc.GroupExecutor, key string) {
	t.Helper()
	gate := make(chan struct{})
	var running gauge
	hs := make([]*groupconc.TaskHandle[int], 7)
	for i := range hs {
		hs[i] = submit(t, t.Context(), e, key, fmt.Sprintf("batch-%d", i), gated(gate, i, &running))
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

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// goroutineID returns the calling goroutine's ID, as its stack trace shows it.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// forEachMode runs f as one subtest per isolation mode: for the properties
// both modes promise alike (limits, outcomes, listener events, Shutdown,
// ShutdownGroup and EvictGroup).
func forEachMode(t *testing.T, f func(t *testing.T, mode groupconc.IsolationMode)) {
	t.Helper()
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		t.Run(mode.String(), func(t *testing.T) { f(t, mode) })
	}
}
