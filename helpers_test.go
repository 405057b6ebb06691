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
	"sync"
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

// env is one executor under the oracle. Build it inside the bubble.
type env struct {
	t   *testing.T
	o   *oracle
	p   *groupconc.GroupPolicy
	e   *groupconc.GroupExecutor
	ctx context.Context
	n   int
}

// newEnv builds b, with the oracle's recorder (teed with extra listeners) as
// its listener, and an executor for it.
func newEnv(t *testing.T, b *groupconc.PolicyBuilder, extra ...groupconc.TaskLifecycleListener) *env {
	t.Helper()
	o := newOracle()
	var l groupconc.TaskLifecycleListener = o.rec
	if len(extra) > 0 {
		l = append(oracleTee{o.rec}, extra...)
	}
	p, err := b.TaskLifecycleListener(l).Build()
	require.NoError(t, err)
	return &env{t: t, o: o, p: p, e: groupconc.New(p), ctx: t.Context()}
}

func builder() *groupconc.PolicyBuilder { return groupconc.NewPolicyBuilder() }

func (r *env) nextID() string {
	r.n++
	return fmt.Sprintf("t%d", r.n)
}

// submit submits fn to key with the test's context; Submit must accept it.
func (r *env) submit(key string, fn groupconc.Task[int]) *groupconc.TaskHandle[int] {
	r.t.Helper()
	return r.submitCtx(r.ctx, key, fn)
}

func (r *env) submitCtx(ctx context.Context, key string, fn groupconc.Task[int]) *groupconc.TaskHandle[int] {
	r.t.Helper()
	var h *groupconc.TaskHandle[int]
	var err error
	r.o.guard(r.t, "Submit", func() { h, err = oracleSubmit(r.o, ctx, r.e, key, r.nextID(), fn) })
	require.NoError(r.t, err)
	return h
}

// started reports whether h's task has been heard starting.
func (r *env) started(h *groupconc.TaskHandle[int]) bool {
	l, _ := r.o.rec.lookup(h.GroupKey(), h.TaskID())
	for _, k := range l.seq() {
		if k == oracleStarted {
			return true
		}
	}
	return false
}

// countPermitted reports how many of hs have started holding their permits
// (not run without them after a rejection).
func (r *env) countPermitted(hs ...*groupconc.TaskHandle[int]) int {
	n := 0
	for _, h := range hs {
		if r.started(h) && !r.o.rec.rejected(h.GroupKey(), h.TaskID()) {
			n++
		}
	}
	return n
}

// countStarted reports how many of hs have started.
func (r *env) countStarted(hs ...*groupconc.TaskHandle[int]) int {
	n := 0
	for _, h := range hs {
		if r.started(h) {
			n++
		}
	}
	return n
}

// finish drains the executor with Shutdown (which must succeed within a
// fake minute: release every gate first), seals the recorder and runs every
// end-of-life check.
func (r *env) finish() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	r.o.guard(r.t, "Shutdown", func() { err = r.e.Shutdown(ctx) })
	require.NoError(r.t, err, "Shutdown must drain: is a gate still closed?")
	r.o.seal()
	r.o.checkAll(r.t, r.e, oracleLimitsOf(r.p))
	r.o.checkStill(r.t, r.e, r.p, nil)
}

// block is a task that runs until gate is closed, ignoring its context.
func block(gate <-chan struct{}) groupconc.Task[int] {
	return func(context.Context) (int, error) {
		<-gate
		return 1, nil
	}
}

// blockCtx is a task that runs until gate is closed or its context ends,
// and then returns the context's error.
func blockCtx(gate <-chan struct{}) groupconc.Task[int] {
	return func(ctx context.Context) (int, error) {
		select {
		case <-gate:
			return 1, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func succeed(context.Context) (int, error) { return 1, nil }

// gatedTask is a task whose start the test observes and whose end it controls.
// Its function ignores its context on purpose: once running, it keeps its
// permits until the test releases it, whatever cancels it.
type gatedTask struct {
	value   int
	started atomic.Bool
	release chan struct{}
	once    sync.Once
}

// newGatedTask returns a gated task returning value; the test's cleanup
// releases it if the test did not, so no goroutine outlives the bubble.
func newGatedTask(t *testing.T, value int) *gatedTask {
	k := &gatedTask{value: value, release: make(chan struct{})}
	t.Cleanup(k.Release)
	return k
}

// Release lets the task return; it may be called more than once.
func (k *gatedTask) Release() { k.once.Do(func() { close(k.release) }) }

// Fn is the task's function.
func (k *gatedTask) Fn(context.Context) (int, error) {
	k.started.Store(true)
	<-k.release
	return k.value, nil
}

// newExecutor builds b and returns an executor for it, closed by the cleanup.
func newExecutor(t *testing.T, b *groupconc.PolicyBuilder) *groupconc.GroupExecutor {
	t.Helper()
	p, err := b.Build()
	require.NoError(t, err)
	e := groupconc.New(p)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// doneResult returns the result of a handle that must already be complete.
func doneResult(t *testing.T, h *groupconc.TaskHandle[int]) groupconc.GroupResult[int] {
	t.Helper()
	require.True(t, h.IsDone(), "task %s/%s: handle not complete, want complete", h.GroupKey(), h.TaskID())
	return h.Wait()
}

// requireWaiting requires that the task of h, running k, is accepted but
// neither started nor complete.
func requireWaiting(t *testing.T, h *groupconc.TaskHandle[int], k *gatedTask) {
	t.Helper()
	require.False(t, h.IsDone(), "task %s/%s: complete (%v), want waiting", h.GroupKey(), h.TaskID(), statusIfDone(h))
	require.False(t, k.started.Load(), "task %s/%s: started, want waiting", h.GroupKey(), h.TaskID())
}

func statusIfDone(h *groupconc.TaskHandle[int]) groupconc.TaskStatus {
	if !h.IsDone() {
		return 0
	}
	return h.Wait().Status
}

// requireRejected requires h complete and REJECTED by the threshold of
// layer ("group" or "global"), and returns its *RejectedError.
func requireRejected(t *testing.T, h *groupconc.TaskHandle[int], layer string) *groupconc.RejectedError {
	t.Helper()
	r := doneResult(t, h)
	require.Equal(t, groupconc.StatusRejected, r.Status, "task %s/%s: err %v", h.GroupKey(), h.TaskID(), r.Err)
	var re *groupconc.RejectedError
	require.ErrorAs(t, r.Err, &re)
	require.ErrorIs(t, r.Err, groupconc.ErrRejected)
	assert.Equal(t, h.GroupKey(), re.GroupKey)
	assert.Equal(t, h.TaskID(), re.TaskID)
	other := map[string]string{"group": "global", "global": "group"}[layer]
	assert.Contains(t, re.Reason, layer, "reason should name the %s threshold", layer)
	assert.NotContains(t, re.Reason, other, "reason should not name the %s threshold", other)
	return re
}

// quiesce waits for every handle, lets every goroutine settle and requires
// every permit of e to be back.
func quiesce(t *testing.T, e *groupconc.GroupExecutor, hs ...*groupconc.TaskHandle[int]) {
	t.Helper()
	for _, h := range hs {
		h.Wait()
	}
	synctest.Wait()
	require.NoError(t, e.Quiescent())
}

// recorder is a TaskLifecycleListener that keeps each task's events in
// order, with its OnCompleted result and OnRejected reason.
type recorder struct {
	mu      sync.Mutex
	events  map[string][]string                   // guarded by mu; by eventKey
	results map[string]groupconc.GroupResult[any] // guarded by mu
	reasons map[string]string                     // guarded by mu
}

func newRecorder() *recorder {
	return &recorder{
		events:  map[string][]string{},
		results: map[string]groupconc.GroupResult[any]{},
		reasons: map[string]string{},
	}
}

func eventKey(groupKey, taskID string) string { return groupKey + "/" + taskID }

func (r *recorder) add(groupKey, taskID, ev string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := eventKey(groupKey, taskID)
	r.events[k] = append(r.events[k], ev)
}

func (r *recorder) OnSubmitted(groupKey, taskID string) { r.add(groupKey, taskID, evSubmitted) }

func (r *recorder) OnStarted(groupKey, taskID string) { r.add(groupKey, taskID, evStarted) }

func (r *recorder) OnCompleted(groupKey, taskID string, result groupconc.GroupResult[any]) {
	r.mu.Lock()
	r.results[eventKey(groupKey, taskID)] = result
	r.mu.Unlock()
	r.add(groupKey, taskID, evCompleted)
}

func (r *recorder) OnRejected(groupKey, taskID, reason string) {
	r.mu.Lock()
	r.reasons[eventKey(groupKey, taskID)] = reason
	r.mu.Unlock()
	r.add(groupKey, taskID, evRejected)
}

// Events returns a copy of the task's events so far.
func (r *recorder) Events(groupKey, taskID string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events[eventKey(groupKey, taskID)]...)
}

// Result returns the result OnCompleted reported for the task.
func (r *recorder) Result(groupKey, taskID string) (groupconc.GroupResult[any], bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, ok := r.results[eventKey(groupKey, taskID)]
	return res, ok
}

// Reason returns the reason OnRejected reported for the task.
func (r *recorder) Reason(groupKey, taskID string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reasons[eventKey(groupKey, taskID)]
}

// Count returns how many events of kind ev were recorded, over all tasks.
func (r *recorder) Count(ev string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, evs := range r.events {
		for _, e := range evs {
			if e == ev {
				n++
			}
		}
	}
	return n
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

// Listener events as recorder names them.
const (
	evSubmitted = "submitted"
	evRejected  = "rejected"
	evStarted   = "started"
	evCompleted = "completed"
)

var _ groupconc.TaskLifecycleListener = (*recorder)(nil)

// forEachMode runs f as one subtest per isolation mode: for the properties
// both modes promise alike (limits, outcomes, listener events, Shutdown,
// ShutdownGroup and EvictGroup).
func forEachMode(t *testing.T, f func(t *testing.T, mode groupconc.IsolationMode)) {
	t.Helper()
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		t.Run(mode.String(), func(t *testing.T) { f(t, mode) })
	}
}
