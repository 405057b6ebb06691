package groupconc_test

// The reliability oracle: one reusable set of checks for the invariants
// below (I1–I8), shared by the env of helpers_env_test.go, fuzz_ops_test.go and
// soak_test.go (and usable by any other test of the package).
//
//   - I1 limits: gauges raised and lowered inside each task's function
//     (oracleGauges, checkLimits) and the Stats snapshot of a still executor
//     (checkStill);
//   - I2 no permit leak: checkQuiescent (e.Quiescent, plus idle counts);
//   - I3 one terminal result per accepted Submit: checkResults, awaitAll;
//   - I4 balanced, ordered listener events: oracleRecorder, checkEvents;
//   - I5 no goroutine left: the end of synctest.Test, or goleak;
//   - I6 no panic escapes: guard around Submit, Shutdown and Close (and any
//     escaped panic in a goroutine crashes the test binary anyway).
//
// Every package-level identifier of the oracle (oracle*_test.go) starts
// with "oracle", so that it cannot collide with the other test files of the
// package.

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kobe/groupconc"
)

// oracleGauge tracks a current value and its maximum.
type oracleGauge struct{ cur, max atomic.Int64 }

func (g *oracleGauge) inc() {
	n := g.cur.Add(1)
	for m := g.max.Load(); n > m && !g.max.CompareAndSwap(m, n); m = g.max.Load() {
	}
}

func (g *oracleGauge) dec() { g.cur.Add(-1) }

// oracleGauges are the independent counters of running functions: one for
// all groups, one per gauge key (a group key, or a key plus an eviction
// generation), and one for functions run without permits after a rejection.
type oracleGauges struct {
	global  oracleGauge
	outside oracleGauge
	groups  sync.Map // gauge key -> *oracleGauge
}

func (g *oracleGauges) group(key string) *oracleGauge {
	if gg, ok := g.groups.Load(key); ok {
		return gg.(*oracleGauge)
	}
	gg, _ := g.groups.LoadOrStore(key, new(oracleGauge))
	return gg.(*oracleGauge)
}

// oracleTracked is one accepted Submit, seen through its handle.
type oracleTracked struct {
	groupKey, taskID string
	done             <-chan struct{}
	result           func() groupconc.GroupResult[any] // only once done is closed
	await            func(ctx context.Context) (groupconc.GroupResult[any], error)
	first            groupconc.TaskStatus // first status observed, 0 before
	firstErr         error
}

// oracle is the invariant oracle of one executor. Submit through
// oracleSubmit (or wrap with oracleTask and track with oracleTrack) and set
// o.rec (or a tee containing it) as the policy's listener.
type oracle struct {
	rec    *oracleRecorder
	gauges oracleGauges

	// handler is set by tests whose policy has a RejectionHandler: a task
	// rejected and never run may then end SUCCESS or FAILED too.
	handler bool

	// live, if set, holds the limits in force over time of an executor
	// whose policy changes (UpdatePolicy): checkLimits and checkStill then
	// check against it instead of one policy. Set it before the first
	// Submit.
	live *oracleLive

	// accepted counts accepted Submits, tracked or not; finals counts the
	// final statuses of untracked ones, told through final (the soak test
	// checks its handles itself instead of keeping a million of them).
	accepted atomic.Int64
	finals   [5]atomic.Uint64

	mu      sync.Mutex
	tracked []*oracleTracked // guarded by mu
	refused []string         // guarded by mu: keys of Submits that returned an error
	panics  []string         // guarded by mu: panics caught by guard
	// dos and doKeys are guarded by mu: the Do calls made, by the
	// goroutine that calls each, and the keys of their accepted tasks (see
	// oracle_do_test.go).
	dos    map[string]*oracleDo
	doKeys map[string]bool
}

func newOracle() *oracle { return &oracle{rec: newOracleRecorder()} }

// seal marks the point after which no event may arrive (after Shutdown has
// returned nil: every task is over).
func (o *oracle) seal() { o.rec.sealed.Store(true) }

// oracleTask wraps fn so that it raises the gauges while it runs: the global
// and gaugeKey's gauges when it runs with permits, the outside gauge when it
// runs after a rejection (caller-runs or Rejection.Run).
func oracleTask[T any](o *oracle, gaugeKey, groupKey, taskID string, fn groupconc.Task[T]) groupconc.Task[T] {
	return oracleTaskCost(o, gaugeKey, groupKey, taskID, 1, fn)
}

// oracleTaskCost is oracleTask for a task of the given cost. With o.live
// set, the function holds permits in its group's scope and in each
// ancestor's, resolved now.
func oracleTaskCost[T any](o *oracle, gaugeKey, groupKey, taskID string, cost int, fn groupconc.Task[T]) groupconc.Task[T] {
	o.rec.with(groupKey, taskID, func(l *oracleTaskLog) { l.wrapped = true })
	return oracleWrap(o, gaugeKey, groupKey, cost, func() string { return taskID }, fn)
}

// oracleWrap is oracleTaskCost's wrapper for a task whose ID id returns as
// its function starts: a Do's is known only then (see oracleDoTask).
func oracleWrap[T any](o *oracle, gaugeKey, groupKey string, cost int, id func() string, fn groupconc.Task[T]) groupconc.Task[T] {
	since := 0
	if o.live != nil {
		since = o.live.epoch()
	}
	return oracleWrapSince(o, gaugeKey, groupKey, cost, since, id, fn)
}

// oracleWrapSince is oracleWrap for a task submitted in the epoch since.
func oracleWrapSince[T any](o *oracle, gaugeKey, groupKey string, cost, since int, id func() string, fn groupconc.Task[T]) groupconc.Task[T] {
	var x oracleEntry
	if o.live != nil {
		x = oracleEntry{chain: o.live.chain(groupKey), cost: cost, since: since}
		x.chain[0] = gaugeKey
	}
	return func(ctx context.Context) (T, error) {
		taskID := id()
		o.rec.with(groupKey, taskID, func(l *oracleTaskLog) { l.fnCalls++ })
		if o.rec.rejected(groupKey, taskID) {
			if o.live != nil {
				o.live.checkOutside(x)
			}
			o.gauges.outside.inc()
			defer o.gauges.outside.dec()
		} else {
			g := o.gauges.group(gaugeKey)
			o.gauges.global.inc()
			g.inc()
			defer func() {
				g.dec()
				o.gauges.global.dec()
			}()
			if o.live != nil {
				defer o.live.enterTask(x)()
			}
		}
		return fn(ctx)
	}
}

// oracleTrack records an accepted Submit's handle.
func oracleTrack[T any](o *oracle, h *groupconc.TaskHandle[T]) *oracleTracked {
	tr := &oracleTracked{
		groupKey: h.GroupKey(),
		taskID:   h.TaskID(),
		done:     h.Done(),
		result:   func() groupconc.GroupResult[any] { return oracleAny(h.Wait()) },
		await: func(ctx context.Context) (groupconc.GroupResult[any], error) {
			r, err := h.Await(ctx)
			return oracleAny(r), err
		},
	}
	o.accepted.Add(1)
	o.mu.Lock()
	o.tracked = append(o.tracked, tr)
	o.mu.Unlock()
	return tr
}

// final records the final status of an accepted Submit whose handle is not
// tracked.
func (o *oracle) final(s groupconc.TaskStatus) {
	o.accepted.Add(1)
	if s >= groupconc.StatusSuccess && s <= groupconc.StatusRejected {
		o.finals[s].Add(1)
	} else {
		o.finals[0].Add(1)
	}
}

// oracleSubmit submits fn, wrapped by oracleTask with the group key as gauge
// key, and tracks the handle (or records the refusal).
func oracleSubmit[T any](o *oracle, ctx context.Context, e *groupconc.GroupExecutor, groupKey, taskID string, fn groupconc.Task[T]) (*groupconc.TaskHandle[T], error) {
	return oracleSubmitAs(o, groupKey, ctx, e, groupKey, taskID, fn)
}

// oracleSubmitAs is oracleSubmit with an explicit gauge key.
func oracleSubmitAs[T any](o *oracle, gaugeKey string, ctx context.Context, e *groupconc.GroupExecutor, groupKey, taskID string, fn groupconc.Task[T]) (*groupconc.TaskHandle[T], error) {
	return oracleSubmitWith(o, gaugeKey, ctx, e, groupKey, taskID, fn, groupconc.SubmitOptions{})
}

// oracleSubmitWith is oracleSubmitAs through SubmitWith.
func oracleSubmitWith[T any](o *oracle, gaugeKey string, ctx context.Context, e *groupconc.GroupExecutor, groupKey, taskID string, fn groupconc.Task[T], opts groupconc.SubmitOptions) (*groupconc.TaskHandle[T], error) {
	h, err := groupconc.SubmitWith(ctx, e, groupKey, taskID, oracleTaskCost(o, gaugeKey, groupKey, taskID, opts.Cost, fn), opts)
	if err != nil {
		o.mu.Lock()
		o.refused = append(o.refused, oracleKey(groupKey, taskID))
		o.mu.Unlock()
		return nil, err
	}
	oracleTrack(o, h)
	return h, nil
}

func oracleAny[T any](r groupconc.GroupResult[T]) groupconc.GroupResult[any] {
	return groupconc.GroupResult[any]{
		GroupKey: r.GroupKey, TaskID: r.TaskID, Status: r.Status, Value: r.Value, Err: r.Err,
		Submitted: r.Submitted, Start: r.Start, End: r.End,
	}
}

func (o *oracle) snapshot() []*oracleTracked {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.tracked)
}

// guard runs f and turns a panic out of it into a failure (I6): Submit,
// Shutdown and Close must never panic.
func (o *oracle) guard(t testing.TB, name string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("%s panicked: %v\n%s", name, r, debug.Stack())
			o.mu.Lock()
			o.panics = append(o.panics, msg)
			o.mu.Unlock()
			t.Errorf("I6: %s", msg)
		}
	}()
	f()
}
