package groupconc_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

// submitGated submits k's function to key with o, and fails the test on
// an error. An empty id gets one made from a count.
func submitGated(t *testing.T, e *groupconc.GroupExecutor, key, id string, k *gatedTask, o groupconc.SubmitOptions) *groupconc.TaskHandle[int] {
	t.Helper()
	if id == "" {
		id = "gated-" + strconv.FormatInt(gatedIDs.Add(1), 10)
	}
	h, err := groupconc.SubmitWith(context.Background(), e, key, id, k.Fn, o)
	require.NoError(t, err)
	return h
}

var gatedIDs atomic.Int64

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
