package groupconc_test

// One test (or a few) per adversarial scenario S1–S27 of
// shared/RELIABILITY.md §2, named TestSNN…; each checks the invariants the
// scenario lists through the oracle of oracle_test.go. Almost all run inside
// a synctest bubble with gated tasks, so "started", "waiting" and "blocked"
// are exact after synctest.Wait() and time is fake.

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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// relEnv is one executor under the oracle. Build it inside the bubble.
type relEnv struct {
	t   *testing.T
	o   *oracle
	p   *groupconc.GroupPolicy
	e   *groupconc.GroupExecutor
	ctx context.Context
	n   int
}

// relNew builds b, with the oracle's recorder (teed with extra listeners) as
// its listener, and an executor for it.
func relNew(t *testing.T, b *groupconc.PolicyBuilder, extra ...groupconc.TaskLifecycleListener) *relEnv {
	t.Helper()
	o := newOracle()
	var l groupconc.TaskLifecycleListener = o.rec
	if len(extra) > 0 {
		l = append(oracleTee{o.rec}, extra...)
	}
	p, err := b.TaskLifecycleListener(l).Build()
	require.NoError(t, err)
	return &relEnv{t: t, o: o, p: p, e: groupconc.New(p), ctx: t.Context()}
}

func relBuilder() *groupconc.PolicyBuilder { return groupconc.NewPolicyBuilder() }

func (r *relEnv) nextID() string {
	r.n++
	return fmt.Sprintf("t%d", r.n)
}

// submit submits fn to key with the test's context; Submit must accept it.
func (r *relEnv) submit(key string, fn groupconc.Task[int]) *groupconc.TaskHandle[int] {
	r.t.Helper()
	return r.submitCtx(r.ctx, key, fn)
}

func (r *relEnv) submitCtx(ctx context.Context, key string, fn groupconc.Task[int]) *groupconc.TaskHandle[int] {
	r.t.Helper()
	var h *groupconc.TaskHandle[int]
	var err error
	r.o.guard(r.t, "Submit", func() { h, err = oracleSubmit(r.o, ctx, r.e, key, r.nextID(), fn) })
	require.NoError(r.t, err)
	return h
}

// started reports whether h's task has been heard starting.
func (r *relEnv) started(h *groupconc.TaskHandle[int]) bool {
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
func (r *relEnv) countPermitted(hs ...*groupconc.TaskHandle[int]) int {
	n := 0
	for _, h := range hs {
		if r.started(h) && !r.o.rec.rejected(h.GroupKey(), h.TaskID()) {
			n++
		}
	}
	return n
}

// countStarted reports how many of hs have started.
func (r *relEnv) countStarted(hs ...*groupconc.TaskHandle[int]) int {
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
func (r *relEnv) finish() {
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

// relBlock is a task that runs until gate is closed, ignoring its context.
func relBlock(gate <-chan struct{}) groupconc.Task[int] {
	return func(context.Context) (int, error) {
		<-gate
		return 1, nil
	}
}

// relBlockCtx is a task that runs until gate is closed or its context ends,
// and then returns the context's error.
func relBlockCtx(gate <-chan struct{}) groupconc.Task[int] {
	return func(ctx context.Context) (int, error) {
		select {
		case <-gate:
			return 1, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func relOK(context.Context) (int, error) { return 1, nil }

// relLayer configures exactly one limited layer, of capacity cap, with a
// queue threshold (-1: none) on that layer, and names the group key of the
// i-th task so that all tasks meet at that layer.
type relLayer struct {
	name   string
	policy func(cap, queue int) *groupconc.PolicyBuilder
	key    func(i int) string
}

var relLayers = []relLayer{
	{
		name: "global",
		policy: func(cap, queue int) *groupconc.PolicyBuilder {
			b := relBuilder().GlobalMaxInFlight(cap).DefaultMaxConcurrencyPerGroup(groupconc.Unlimited)
			if queue >= 0 {
				b.GlobalQueueThreshold(queue)
			}
			return b
		},
		key: func(i int) string { return fmt.Sprintf("g%d", i) },
	},
	{
		name: "bulkhead",
		policy: func(cap, queue int) *groupconc.PolicyBuilder {
			b := relBuilder().DefaultMaxInFlightPerGroup(cap).DefaultMaxConcurrencyPerGroup(groupconc.Unlimited)
			if queue >= 0 {
				b.DefaultQueueThresholdPerGroup(queue)
			}
			return b
		},
		key: func(int) string { return "a" },
	},
	{
		name: "concurrency",
		policy: func(cap, queue int) *groupconc.PolicyBuilder {
			b := relBuilder().DefaultMaxConcurrencyPerGroup(cap)
			if queue >= 0 {
				b.DefaultQueueThresholdPerGroup(queue)
			}
			return b
		},
		key: func(int) string { return "a" },
	},
}

// ---------------------------------------------------------------------------
// A. Semaphore acquisition and cancellation

// S1: a cancelled waiter at the head of a layer's queue must not strand the
// waiters behind it when a permit frees in the same step. With weight-1
// permits either the head waiter got the permit before its cancellation (and
// runs), or it is cancelled and the next waiter gets the permit: in no case
// is the permit lost. Repeated, since the step is a real race.
func TestS01CancelledWaiterDoesNotStrandOthers(t *testing.T) {
	for _, layer := range relLayers {
		for _, route := range []string{"ctx", "handle", "ctx-first", "handle-first"} {
			t.Run(layer.name+"/"+route, func(t *testing.T) {
				for range 20 {
					synctest.Test(t, func(t *testing.T) { relS01(t, layer, route) })
				}
			})
		}
	}
}

func relS01(t *testing.T, layer relLayer, route string) {
	r := relNew(t, layer.policy(1, -1))
	holdGate := make(chan struct{})
	hold := r.submit(layer.key(0), relBlock(holdGate))
	synctest.Wait()
	require.True(t, r.started(hold))

	ctx0, cancel0 := context.WithCancel(r.ctx)
	defer cancel0()
	gates := make([]chan struct{}, 4)
	ws := make([]*groupconc.TaskHandle[int], 4)
	for i := range ws {
		gates[i] = make(chan struct{})
		ctx := r.ctx
		if i == 0 {
			ctx = ctx0
		}
		ws[i] = r.submitCtx(ctx, layer.key(i+1), relBlock(gates[i]))
		synctest.Wait() // parked in Acquire before the next one arrives
	}
	require.Zero(t, r.countStarted(ws...), "waiters must wait")

	cancel := func() { cancel0() }
	if strings.HasPrefix(route, "handle") {
		cancel = func() { ws[0].Cancel() }
	}
	if strings.HasSuffix(route, "-first") {
		cancel()
		synctest.Wait()
		close(holdGate)
	} else {
		// Cancel the head waiter and free the permit in one step.
		go cancel()
		close(holdGate)
	}
	synctest.Wait()

	require.True(t, ws[0].IsDone() || r.started(ws[0]), "the head waiter is cancelled or runs")
	assert.Equal(t, 1, r.countStarted(ws...), "the freed permit went to exactly one waiter")
	if !r.started(ws[0]) {
		assert.Equal(t, groupconc.StatusCancelled, ws[0].Wait().Status)
		assert.True(t, r.started(ws[1]), "the waiter behind the cancelled head must get the permit")
	}
	for _, g := range gates {
		close(g)
	}
	r.finish()
}

// S2: a task whose context is done before it holds its permits never runs,
// is CANCELLED, and leaks nothing: already done at Submit, or ended while it
// waited at each layer.
func TestS02PreCancelledContextNeverRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().GlobalMaxInFlight(2).DefaultMaxInFlightPerGroup(2).DefaultMaxConcurrencyPerGroup(1))
		cause := errors.New("caller gave up")
		ctx, cancel := context.WithCancelCause(r.ctx)
		cancel(cause)
		var ran atomic.Bool
		h := r.submitCtx(ctx, "a", func(context.Context) (int, error) { ran.Store(true); return 1, nil })
		require.True(t, h.IsDone(), "a task with a done context completes inside Submit")
		res := h.Wait()
		assert.Equal(t, groupconc.StatusCancelled, res.Status)
		assert.ErrorIs(t, res.Err, context.Canceled)
		assert.ErrorIs(t, res.Err, cause, "the caller's cause is kept")
		synctest.Wait()
		assert.False(t, ran.Load(), "the function must never be called")
		l, _ := r.o.rec.lookup("a", h.TaskID())
		assert.Equal(t, []oracleEventKind{oracleSubmitted, oracleCompleted}, l.seq())
		r.finish()
	})
}

func TestS02CancelWhileWaitingAtEachLayerNeverRuns(t *testing.T) {
	for _, layer := range relLayers {
		t.Run(layer.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := relNew(t, layer.policy(1, -1))
				gate := make(chan struct{})
				r.submit(layer.key(0), relBlock(gate))
				synctest.Wait()
				ctx, cancel := context.WithCancel(r.ctx)
				w := r.submitCtx(ctx, layer.key(1), relBlock(gate))
				synctest.Wait()
				s := r.e.Stats()
				require.Equal(t, 1, s.Waiting, "the second task waits at the %s layer", layer.name)
				cancel()
				synctest.Wait()
				assert.Equal(t, groupconc.StatusCancelled, w.Wait().Status)
				assert.False(t, r.started(w))
				assert.Zero(t, r.e.Stats().Waiting, "a cancelled waiter stops waiting")
				close(gate)
				r.finish()
			})
		})
	}
}

// S2 (race): the context ends in the same step as the last permit is handed
// to the waiter. Whichever wins, the function runs only if it was heard
// starting, and the result is CANCELLED or the function's own.
func TestS02CancelRacingPermitGrantIsConsistent(t *testing.T) {
	for i := range 50 {
		synctest.Test(t, func(t *testing.T) {
			r := relNew(t, relLayers[i%3].policy(1, -1))
			key := relLayers[i%3].key
			gate := make(chan struct{})
			r.submit(key(0), relBlock(gate))
			synctest.Wait()
			ctx, cancel := context.WithCancel(r.ctx)
			w := r.submitCtx(ctx, key(1), relBlockCtx(make(chan struct{})))
			synctest.Wait()
			close(gate)
			if i%2 == 0 {
				runtime.Gosched()
			}
			cancel()
			synctest.Wait()
			assert.Equal(t, groupconc.StatusCancelled, w.Wait().Status)
			r.finish()
		})
	}
}

// S2 (caller's context): a waiter whose caller context is cancelled, where
// that same cancellation makes the running task return and hand its permit
// to the waiter. The waiter's context was done before it held its permits,
// so it must end CANCELLED without running (DESIGN "Outcomes"). The caller's
// cancellation reaches a task's context through context.AfterFunc, i.e. on
// another goroutine, so this needs the permit hand-off to win that race:
// repeated to make that near-certain.
func TestS02CallerCancelThatFreesThePermitStillCancelsTheWaiter(t *testing.T) {
	ran := 0
	for range 200 {
		synctest.Test(t, func(t *testing.T) {
			r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(1))
			ctx, cancel := context.WithCancel(r.ctx)
			r.submitCtx(ctx, "a", relBlockCtx(make(chan struct{})))
			w := r.submitCtx(ctx, "a", relOK)
			synctest.Wait()
			cancel()
			synctest.Wait()
			if r.started(w) {
				ran++
			}
			assert.Equal(t, groupconc.StatusCancelled, w.Wait().Status)
			r.finish()
		})
		if t.Failed() {
			break
		}
	}
	assert.Zero(t, ran, "a task whose caller context ended before it held its permits ran")
}

// S2 at each acquisition stage: one task waits at each layer of one group,
// holding the layers before it (global+bulkhead waiting for concurrency;
// global waiting for the bulkhead; nothing, waiting for global). Cancelling
// each gives back exactly what it held: the counts drop by that much and
// the layers it held go to the next in line.
func TestS02CancelAfterEachAcquisitionStage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().GlobalMaxInFlight(3).DefaultMaxInFlightPerGroup(2).DefaultMaxConcurrencyPerGroup(1))
		gate := make(chan struct{})
		run := r.submit("a", relBlock(gate))
		synctest.Wait()
		atConc := r.submit("a", relBlock(gate)) // holds global + bulkhead
		synctest.Wait()
		atBulk := r.submit("a", relBlock(gate)) // holds global
		synctest.Wait()
		atGlobal := r.submit("a", relBlock(gate)) // holds nothing
		synctest.Wait()
		require.True(t, r.started(run))
		gs, _ := r.e.GroupStats("a")
		require.Equal(t, 3, r.e.Stats().GlobalInFlight)
		require.Equal(t, 2, gs.InFlight)
		require.Equal(t, 3, gs.Waiting)

		atConc.Cancel() // gives back bulkhead and global: atBulk takes the bulkhead, atGlobal the global
		synctest.Wait()
		gs, _ = r.e.GroupStats("a")
		assert.Equal(t, 3, r.e.Stats().GlobalInFlight)
		assert.Equal(t, 2, gs.InFlight)
		assert.Equal(t, 2, gs.Waiting)

		atBulk.Cancel() // gives back bulkhead and global: atGlobal takes the bulkhead
		synctest.Wait()
		gs, _ = r.e.GroupStats("a")
		assert.Equal(t, 2, r.e.Stats().GlobalInFlight)
		assert.Equal(t, 2, gs.InFlight)
		assert.Equal(t, 1, gs.Waiting)

		atGlobal.Cancel()
		synctest.Wait()
		gs, _ = r.e.GroupStats("a")
		assert.Equal(t, 1, r.e.Stats().GlobalInFlight)
		assert.Equal(t, 1, gs.InFlight)
		assert.Zero(t, gs.Waiting)
		for _, h := range []*groupconc.TaskHandle[int]{atConc, atBulk, atGlobal} {
			assert.False(t, r.started(h))
		}
		close(gate)
		r.finish()
	})
}

// S3: a task holding the global permit while it waits for its group's must
// give the global permit back when it is cancelled there.
func TestS03CancelledGroupWaiterReturnsItsGlobalPermit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().GlobalMaxInFlight(2).DefaultMaxConcurrencyPerGroup(1))
		gate := make(chan struct{})
		a1 := r.submit("a", relBlock(gate))
		a2 := r.submit("a", relBlock(gate)) // holds a global permit, waits on a's concurrency
		synctest.Wait()
		require.True(t, r.started(a1))
		require.False(t, r.started(a2))
		require.Equal(t, 2, r.e.Stats().GlobalInFlight)
		b1 := r.submit("b", relBlock(gate)) // waits for a global permit
		synctest.Wait()
		require.False(t, r.started(b1), "the global cap is full")

		require.True(t, a2.Cancel())
		synctest.Wait()
		assert.True(t, r.started(b1), "a2's global permit must go to b1")
		assert.Equal(t, 2, r.e.Stats().GlobalInFlight)
		close(gate)
		synctest.Wait()
		require.NoError(t, r.e.Quiescent())

		// Full capacity is back: exactly the cap starts.
		gate2 := make(chan struct{})
		hs := []*groupconc.TaskHandle[int]{r.submit("c", relBlock(gate2)), r.submit("d", relBlock(gate2)), r.submit("e", relBlock(gate2))}
		synctest.Wait()
		assert.Equal(t, 2, r.countStarted(hs...))
		close(gate2)
		r.finish()
		assert.EqualValues(t, 2, r.o.globalMax())
	})
}

// relExit is one way for a task to leave the executor, run against an
// executor whose one limited layer (cap 2) is held by one other task.
type relExit struct {
	name   string
	queue  int                            // queue threshold of the limited layer; -1 none
	policy func(*groupconc.PolicyBuilder) // extra settings
	// run makes one task leave by this path; fill is a gate of a task that
	// holds the layer's other permit, when the path needs the layer full.
	run func(r *relEnv, layer relLayer, fill func() chan struct{})
}

func relExits() []relExit {
	value := func(v int, err error, panicWith any, goexit bool) groupconc.Task[int] {
		return func(context.Context) (int, error) {
			if goexit {
				runtime.Goexit()
			}
			if panicWith != nil {
				panic(panicWith)
			}
			return v, err
		}
	}
	plain := func(fn groupconc.Task[int]) func(r *relEnv, layer relLayer, _ func() chan struct{}) {
		return func(r *relEnv, layer relLayer, _ func() chan struct{}) {
			r.submit(layer.key(10), fn)
			synctest.Wait()
		}
	}
	rejected := func(r *relEnv, layer relLayer, fill func() chan struct{}) {
		gate := fill()
		h := r.submit(layer.key(10), relOK)
		synctest.Wait()
		close(gate)
		synctest.Wait()
		h.Wait()
	}
	return []relExit{
		{name: "success", queue: -1, run: plain(relOK)},
		{name: "error", queue: -1, run: plain(value(0, errors.New("boom"), nil, false))},
		{name: "panic", queue: -1, run: plain(value(0, nil, "boom", false))},
		{name: "goexit", queue: -1, run: plain(value(0, nil, nil, true))},
		{name: "ctx-cancel-running", queue: -1, run: func(r *relEnv, layer relLayer, _ func() chan struct{}) {
			ctx, cancel := context.WithCancel(r.ctx)
			h := r.submitCtx(ctx, layer.key(10), relBlockCtx(make(chan struct{})))
			synctest.Wait()
			require.True(r.t, r.started(h))
			cancel()
			synctest.Wait()
		}},
		{name: "handle-cancel-running", queue: -1, run: func(r *relEnv, layer relLayer, _ func() chan struct{}) {
			h := r.submit(layer.key(10), relBlockCtx(make(chan struct{})))
			synctest.Wait()
			require.True(r.t, h.Cancel())
			synctest.Wait()
		}},
		{name: "pre-cancelled", queue: -1, run: func(r *relEnv, layer relLayer, _ func() chan struct{}) {
			ctx, cancel := context.WithCancel(r.ctx)
			cancel()
			r.submitCtx(ctx, layer.key(10), relOK)
			synctest.Wait()
		}},
		{name: "cancel-waiting", queue: -1, run: func(r *relEnv, layer relLayer, fill func() chan struct{}) {
			gate := fill()
			h := r.submit(layer.key(10), relOK)
			synctest.Wait()
			require.False(r.t, h.IsDone())
			require.True(r.t, h.Cancel())
			synctest.Wait()
			close(gate)
			synctest.Wait()
		}},
		{name: "deadline-waiting", queue: -1, run: func(r *relEnv, layer relLayer, fill func() chan struct{}) {
			gate := fill()
			ctx, cancel := context.WithTimeout(r.ctx, time.Second)
			defer cancel()
			h := r.submitCtx(ctx, layer.key(10), relOK)
			time.Sleep(2 * time.Second) // fake clock: past the deadline
			synctest.Wait()
			require.Equal(r.t, groupconc.StatusCancelled, h.Wait().Status)
			close(gate)
			synctest.Wait()
		}},
		{name: "shutdown-group-waiting", queue: -1, run: func(r *relEnv, layer relLayer, fill func() chan struct{}) {
			gate := fill()
			h := r.submit(layer.key(10), relOK)
			synctest.Wait()
			r.e.ShutdownGroup(layer.key(10))
			synctest.Wait()
			require.Equal(r.t, groupconc.StatusCancelled, h.Wait().Status)
			close(gate)
			synctest.Wait()
		}},
		{name: "reject-abort", queue: 0, run: rejected},
		{name: "reject-discard", queue: 0, policy: func(b *groupconc.PolicyBuilder) { b.RejectionPolicy(groupconc.RejectDiscard) }, run: rejected},
		{name: "caller-runs", queue: 0, policy: func(b *groupconc.PolicyBuilder) { b.RejectionPolicy(groupconc.RejectCallerRuns) }, run: rejected},
		{name: "caller-runs-panic", queue: 0, policy: func(b *groupconc.PolicyBuilder) { b.RejectionPolicy(groupconc.RejectCallerRuns) }, run: func(r *relEnv, layer relLayer, fill func() chan struct{}) {
			gate := fill()
			h := r.submit(layer.key(10), value(0, nil, "boom", false))
			synctest.Wait()
			require.Equal(r.t, groupconc.StatusFailed, h.Wait().Status)
			close(gate)
			synctest.Wait()
		}},
		{name: "handler-run", queue: 0, policy: func(b *groupconc.PolicyBuilder) {
			b.RejectionHandler(func(ctx context.Context, rj *groupconc.Rejection) (any, error) { return rj.Run(ctx) })
		}, run: rejected},
		{name: "handler-fallback", queue: 0, policy: func(b *groupconc.PolicyBuilder) {
			b.RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) { return 7, nil })
		}, run: rejected},
		{name: "handler-panic", queue: 0, policy: func(b *groupconc.PolicyBuilder) {
			b.RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) { panic("handler boom") })
		}, run: rejected},
	}
}

// S4: every way out of the executor releases each permit exactly once. A
// double release while another task holds a permit is silent in x/sync, so
// besides Quiescent the test probes the effective capacity before the
// holder lets go: exactly cap-1 new tasks may start.
func TestS04EveryExitPathReleasesExactlyOnce(t *testing.T) {
	const capacity = 2
	for _, layer := range relLayers {
		for _, exit := range relExits() {
			t.Run(layer.name+"/"+exit.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					b := layer.policy(capacity, exit.queue)
					if exit.policy != nil {
						exit.policy(b)
					}
					r := relNew(t, b)
					r.o.handler = strings.HasPrefix(exit.name, "handler")
					holdGate := make(chan struct{})
					r.submit(layer.key(0), relBlock(holdGate))
					synctest.Wait()
					fill := func() chan struct{} {
						g := make(chan struct{})
						h := r.submit(layer.key(1), relBlock(g))
						synctest.Wait()
						require.True(t, r.started(h))
						return g
					}
					exit.run(r, layer, fill)
					synctest.Wait()

					// One permit is held by the holder: exactly cap-1 may start.
					probeGate := make(chan struct{})
					var probes []*groupconc.TaskHandle[int]
					for i := range capacity {
						probes = append(probes, r.submit(layer.key(20+i), relBlock(probeGate)))
					}
					synctest.Wait()
					assert.Equal(t, capacity-1, r.countPermitted(probes...), "effective capacity after %s", exit.name)
					close(probeGate)
					close(holdGate)
					r.finish()
				})
			})
		}
	}
}

// S5: weights are always 1 here, so there is no head-of-line blocking by a
// large request; what remains is "no barging": a new task never overtakes
// one already waiting at the same layer, and waiters start in the order they
// reached the layer.
func TestS05NoBargingPastQueuedWaiter(t *testing.T) {
	for _, layer := range relLayers {
		t.Run(layer.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := relNew(t, layer.policy(1, -1))
				holdGate, wGate, yGate := make(chan struct{}), make(chan struct{}), make(chan struct{})
				r.submit(layer.key(0), relBlock(holdGate))
				synctest.Wait()
				w := r.submit(layer.key(1), relBlock(wGate))
				synctest.Wait()
				close(holdGate) // the permit is handed to w, not left for grabs
				y := r.submit(layer.key(2), relBlock(yGate))
				synctest.Wait()
				assert.True(t, r.started(w), "the queued waiter gets the permit")
				assert.False(t, r.started(y), "a later Submit must not barge past it")
				close(wGate)
				synctest.Wait()
				assert.True(t, r.started(y))
				close(yGate)
				r.finish()
			})
		})
	}
}

func TestS05WaitersStartInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var order []string
		r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(1), groupconc.ListenerFuncs{
			Started: func(_, id string) { mu.Lock(); order = append(order, id); mu.Unlock() },
		})
		gates := make([]chan struct{}, 6)
		var ids []string
		for i := range gates {
			gates[i] = make(chan struct{})
			ids = append(ids, r.submit("a", relBlock(gates[i])).TaskID())
			synctest.Wait()
		}
		for _, g := range gates {
			close(g)
			synctest.Wait()
		}
		assert.Equal(t, ids, order)
		r.finish()
	})
}

// S5: the executor documents Submit order, not just arrival at the
// semaphore: waiters submitted back to back, with no pause for their
// goroutines to park, still start in Submit order.
func TestS05WaitersStartInSubmitOrderWithoutPauses(t *testing.T) {
	for range 20 {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			var order []string
			r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(1).GlobalMaxInFlight(2), groupconc.ListenerFuncs{
				Started: func(_, id string) { mu.Lock(); order = append(order, id); mu.Unlock() },
			})
			gates := make([]chan struct{}, 8)
			var ids []string
			for i := range gates {
				gates[i] = make(chan struct{})
				ids = append(ids, r.submit("a", relBlock(gates[i])).TaskID())
			}
			for _, g := range gates {
				synctest.Wait()
				close(g)
			}
			r.finish()
			assert.Equal(t, ids, order)
		})
	}
}

// ---------------------------------------------------------------------------
// B. Per-group state: lazy creation, eviction, group shutdown

// S6, as the design has it (DESIGN "Groups", EvictGroup doc): evicting a
// group in use cancels its tasks; those still running keep the old
// semaphores; the next task of the key gets a fresh group with freshly
// resolved limits. Until the old tasks return, old and new together may run
// more than one group's limit; each state alone never does.
func TestS06EvictInUseGroupKeepsOldPermitsAndStartsFresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var resolutions atomic.Int32
		limits := []int{2, 3}
		b := relBuilder().ConcurrencyResolver(func(string) int { return limits[min(int(resolutions.Add(1))-1, 1)] })
		r := relNew(t, b)
		gen := func(n int) func(fn groupconc.Task[int]) *groupconc.TaskHandle[int] {
			return func(fn groupconc.Task[int]) *groupconc.TaskHandle[int] {
				h, err := oracleSubmitAs(r.o, fmt.Sprintf("a#%d", n), r.ctx, r.e, "a", r.nextID(), fn)
				require.NoError(t, err)
				return h
			}
		}
		old, fresh := gen(0), gen(1)

		oldGate := make(chan struct{})
		var oldCtxs []context.Context
		var mu sync.Mutex
		running := func(ctx context.Context) (int, error) {
			mu.Lock()
			oldCtxs = append(oldCtxs, ctx)
			mu.Unlock()
			<-oldGate // ignores its context: keeps its permit until it returns
			return 1, nil
		}
		o1, o2, o3 := old(running), old(running), old(running)
		synctest.Wait()
		require.Equal(t, 2, r.countStarted(o1, o2, o3))
		probeOld, ok := r.e.RelGroupProbe("a")
		require.True(t, ok)

		r.e.EvictGroup("a")
		synctest.Wait()
		_, known := r.e.GroupStats("a")
		assert.False(t, known, "an evicted group is forgotten")
		assert.Equal(t, groupconc.StatusCancelled, o3.Wait().Status, "the waiting task is cancelled")
		for _, ctx := range oldCtxs {
			assert.Error(t, ctx.Err(), "running tasks see their context cancelled")
		}

		newGate := make(chan struct{})
		var news []*groupconc.TaskHandle[int]
		for range 4 {
			news = append(news, fresh(relBlock(newGate)))
		}
		synctest.Wait()
		assert.EqualValues(t, 2, resolutions.Load(), "the limits are resolved again after eviction")
		assert.Equal(t, 3, r.countStarted(news...), "the new group has fresh semaphores with the new limit 3")
		gs, _ := r.e.GroupStats("a")
		assert.Equal(t, 3, gs.MaxConcurrency)
		assert.Equal(t, 3, gs.Running, "the new group's stats count only its own tasks")
		assert.EqualValues(t, 5, r.o.gauges.global.cur.Load(), "documented: old and new together run 2+3")

		// The old tasks return: their permits go back to the old state and
		// must not let the new group's waiter in.
		close(oldGate)
		synctest.Wait()
		assert.Equal(t, 3, r.countStarted(news...), "old releases must not reach the new group's semaphores")
		gs, _ = r.e.GroupStats("a")
		assert.Equal(t, 3, gs.Running)
		assert.NoError(t, probeOld(), "the old state got all its permits back")

		close(newGate)
		r.finish()
		assert.EqualValues(t, 2, r.o.groupMax("a#0"))
		assert.EqualValues(t, 3, r.o.groupMax("a#1"))
	})
}

// S7: tasks holding every layer of an evicted group release into that old
// state, never into the new one (no "released more than held" panic, no
// inflated capacity), and the old state ends fully released. ShutdownGroup
// keeps the state: its tasks release into the same one.
func TestS07ReleaseAfterEvictGoesToTheOldState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := relBuilder().GlobalMaxInFlight(4).DefaultMaxInFlightPerGroup(2).DefaultMaxConcurrencyPerGroup(2).DefaultQueueThresholdPerGroup(1)
		r := relNew(t, b)
		oldGate := make(chan struct{})
		for range 2 {
			h, err := oracleSubmitAs(r.o, "a#0", r.ctx, r.e, "a", r.nextID(), relBlock(oldGate))
			require.NoError(t, err)
			_ = h
		}
		synctest.Wait()
		probeOld, _ := r.e.RelGroupProbe("a")
		r.e.EvictGroup("a")

		newGate := make(chan struct{})
		var news []*groupconc.TaskHandle[int]
		for range 3 { // 2 run, 1 waits in the new group's queue (threshold 1)
			h, err := oracleSubmitAs(r.o, "a#1", r.ctx, r.e, "a", r.nextID(), relBlock(newGate))
			require.NoError(t, err)
			news = append(news, h)
		}
		synctest.Wait()
		require.Equal(t, 2, r.countStarted(news...))
		probeNew, _ := r.e.RelGroupProbe("a")

		close(oldGate)
		synctest.Wait()
		assert.Equal(t, 2, r.countStarted(news...), "old releases leave the new group's capacity alone")
		assert.NoError(t, probeOld())
		assert.Error(t, probeNew(), "the new group is still fully used")

		// The new group's queue threshold is intact: one more waits, the next
		// is rejected.
		extra, err := oracleSubmitAs(r.o, "a#1", r.ctx, r.e, "a", r.nextID(), relBlock(newGate))
		require.NoError(t, err)
		synctest.Wait()
		assert.Equal(t, groupconc.StatusRejected, extra.Wait().Status)

		close(newGate)
		r.finish()
		assert.NoError(t, probeNew())
		assert.EqualValues(t, 2, r.o.groupMax("a#1"))
	})
}

func TestS07ShutdownGroupKeepsOneState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(2))
		gate := make(chan struct{})
		r.submit("a", relBlock(gate))
		r.submit("a", relBlock(gate))
		w := r.submit("a", relBlock(gate))
		synctest.Wait()
		r.e.ShutdownGroup("a")
		synctest.Wait()
		assert.Equal(t, groupconc.StatusCancelled, w.Wait().Status)
		later := []*groupconc.TaskHandle[int]{r.submit("a", relBlock(gate)), r.submit("a", relBlock(gate))}
		synctest.Wait()
		assert.Zero(t, r.countStarted(later...), "same state: the two old tasks still hold both permits")
		assert.Equal(t, 1, r.e.Stats().Groups)
		close(gate)
		r.finish()
		assert.EqualValues(t, 2, r.o.groupMax("a"))
	})
}

// S8, pinned as the design decided (RELIABILITY: "Decided for the current
// design"): the global permit is taken first, so one saturated group can
// hold the whole global cap with tasks that only wait for its own bulkhead,
// and another group's task does not start although its group is idle.
func TestS08OneGroupCanHoldTheWholeGlobalCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().GlobalMaxInFlight(4).DefaultMaxInFlightPerGroup(1).DefaultMaxConcurrencyPerGroup(1))
		gate := make(chan struct{})
		var as []*groupconc.TaskHandle[int]
		for range 10 {
			as = append(as, r.submit("A", relBlock(gate)))
		}
		synctest.Wait()
		require.Equal(t, 1, r.countStarted(as...))
		require.Equal(t, 4, r.e.Stats().GlobalInFlight, "A holds every global permit, 3 of them only waiting for its bulkhead")
		bGate := make(chan struct{})
		b := r.submit("B", relBlock(bGate))
		synctest.Wait()
		assert.False(t, r.started(b), "pinned: B waits although group B is idle (S8, decided)")
		gs, _ := r.e.GroupStats("B")
		assert.Equal(t, 1, gs.Waiting)

		close(gate)
		synctest.Wait()
		assert.True(t, r.started(b), "B starts once A's backlog drains")
		close(bGate)
		r.finish()
	})
}

// S8 mitigation that does work: a per-group queue threshold bounds how many
// of a group's tasks can wait holding global permits (bulkhead + threshold),
// so with bulkhead 1 + threshold 1 < global 4, B starts at once. (A bulkhead
// alone does not: see TestS08OneGroupCanHoldTheWholeGlobalCap.)
func TestS08GroupQueueThresholdBoundsAGroupsShareOfTheGlobalCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().GlobalMaxInFlight(4).DefaultMaxInFlightPerGroup(1).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(1))
		gate := make(chan struct{})
		rejected := 0
		for range 10 {
			if h := r.submit("A", relBlock(gate)); h.IsDone() && h.Wait().Status == groupconc.StatusRejected {
				rejected++
			}
		}
		synctest.Wait()
		assert.Equal(t, 8, rejected)
		assert.Equal(t, 2, r.e.Stats().GlobalInFlight)
		b := r.submit("B", relBlock(gate))
		synctest.Wait()
		assert.True(t, r.started(b), "I8: B starts with free global capacity")
		close(gate)
		r.finish()
	})
}

// I8: with free global capacity a task of B starts while A is saturated.
func TestS08GroupIsolationHoldsWithFreeGlobalCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().GlobalMaxInFlight(8).DefaultMaxConcurrencyPerGroup(1))
		gate := make(chan struct{})
		for range 3 {
			r.submit("A", relBlock(gate))
		}
		synctest.Wait()
		b := r.submit("B", relBlock(gate))
		synctest.Wait()
		assert.True(t, r.started(b))
		close(gate)
		r.finish()
	})
}

// S9: ShutdownGroup with the group's tasks queued while holding global
// permits: the queued ones end CANCELLED at once, the running ones see their
// context cancelled (and here end CANCELLED by returning its error), the
// global permits come back for other groups, and the group accepts new
// tasks afterwards.
func TestS09ShutdownGroupCancelsQueuedTasksAndFreesGlobalPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().GlobalMaxInFlight(5).DefaultMaxConcurrencyPerGroup(1))
		gGate, hGate := make(chan struct{}), make(chan struct{})
		hRun := r.submit("h", relBlockCtx(hGate))
		gRun := r.submit("g", relBlockCtx(gGate))
		var gQueued []*groupconc.TaskHandle[int]
		for range 5 { // 3 hold a global permit, 2 wait for one
			gQueued = append(gQueued, r.submit("g", relBlockCtx(gGate)))
		}
		synctest.Wait()
		require.True(t, r.started(gRun))
		require.True(t, r.started(hRun))
		require.Equal(t, 5, r.e.Stats().GlobalInFlight)
		hNext := r.submit("h2", relBlockCtx(hGate))
		synctest.Wait()
		require.False(t, r.started(hNext), "global cap full")

		r.e.ShutdownGroup("g")
		synctest.Wait()
		assert.Equal(t, groupconc.StatusCancelled, gRun.Wait().Status, "the running task returned its context's error")
		for _, h := range gQueued {
			res := h.Wait()
			assert.Equal(t, groupconc.StatusCancelled, res.Status)
			assert.ErrorIs(t, res.Err, context.Canceled)
			assert.False(t, r.started(h))
		}
		assert.True(t, r.started(hNext), "g's global permits came back")
		assert.False(t, hRun.IsDone(), "other groups are untouched")

		gAgain := r.submit("g", relBlockCtx(gGate))
		synctest.Wait()
		assert.True(t, r.started(gAgain), "the group accepts and runs new tasks")
		close(gGate)
		close(hGate)
		r.finish()
	})
}

// S10: 64 goroutines submit to one fresh key at once: one state is created,
// so the group's limit holds and is reached.
func TestS10RacingFirstSubmitsShareOneGroupState(t *testing.T) {
	for range 5 {
		synctest.Test(t, func(t *testing.T) {
			r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(3).DefaultMaxInFlightPerGroup(3))
			start, gate := make(chan struct{}), make(chan struct{})
			var wg sync.WaitGroup
			for i := range 64 {
				wg.Go(func() {
					<-start
					_, err := oracleSubmit(r.o, r.ctx, r.e, "fresh", fmt.Sprintf("t%d", i), relBlock(gate))
					assert.NoError(t, err)
				})
			}
			close(start)
			wg.Wait()
			synctest.Wait()
			assert.Equal(t, 1, r.e.Stats().Groups, "exactly one state for the key")
			assert.EqualValues(t, 3, r.o.groupMax("fresh"), "the limit is reached and not exceeded")
			gs, _ := r.e.GroupStats("fresh")
			assert.Equal(t, 3, gs.Running)
			assert.Equal(t, 61, gs.Waiting)
			close(gate)
			r.finish()
		})
	}
}

// S11: group state for 10 000 keys is all gone after EvictGroup, and no
// goroutine is left (the bubble's end checks I5). The design has no idle
// sweeper: eviction is explicit.
func TestS11EvictingEveryGroupLeavesNoState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(2))
		const n = 10_000
		for i := range n {
			r.submit(fmt.Sprintf("k%d", i), relOK)
		}
		synctest.Wait()
		require.Equal(t, n, r.e.Stats().Groups)
		require.NoError(t, r.e.Quiescent())
		for i := range n {
			r.e.EvictGroup(fmt.Sprintf("k%d", i))
		}
		s := r.e.Stats()
		assert.Zero(t, s.Groups)
		_, ok := r.e.GroupStats("k0")
		assert.False(t, ok)
		r.finish()
	})
}

// ---------------------------------------------------------------------------
// C. Rejection policies and queue thresholds

// S12: with the queue full, every policy resolves the rejected task's handle
// (none hangs), emits exactly one rejected event, and starts it only when the
// policy runs it. Under abort and discard the handle is complete when Submit
// returns (the design's choice: a REJECTED handle, not a Submit error).
func TestS12RejectedHandleAlwaysResolves(t *testing.T) {
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
					b := relBuilder().DefaultMaxConcurrencyPerGroup(1)
					if where == "global" {
						b.GlobalMaxInFlight(1).GlobalQueueThreshold(1).DefaultMaxConcurrencyPerGroup(groupconc.Unlimited)
					} else {
						b.DefaultQueueThresholdPerGroup(1)
					}
					c.set(b)
					r := relNew(t, b)
					r.o.handler = c.handler
					gate := make(chan struct{})
					r.submit("a", relBlock(gate))
					r.submit("a", relBlock(gate)) // fills the queue
					synctest.Wait()
					h := r.submit("a", relOK)
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

// S13: waiters holding queue slots give them back however they end
// (Cancel, their context, their deadline, ShutdownGroup): afterwards as many
// new tasks as the threshold may wait again, and one more is rejected.
func TestS13CancelledWaitersGiveBackTheirQueueSlots(t *testing.T) {
	for _, where := range []string{"global", "group"} {
		t.Run(where, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const q = 3
				b := relBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(q)
				if where == "global" {
					b = relBuilder().GlobalMaxInFlight(1).GlobalQueueThreshold(q).DefaultMaxConcurrencyPerGroup(groupconc.Unlimited)
				}
				r := relNew(t, b)
				gate := make(chan struct{})
				r.submit("hold", relBlock(gate))
				synctest.Wait()
				key := "hold" // waiters must meet the holder at the limited layer
				if where == "global" {
					key = "w"
				}
				fillQueue := func() []*groupconc.TaskHandle[int] {
					var ws []*groupconc.TaskHandle[int]
					for range q {
						ws = append(ws, r.submit(key, relBlock(gate)))
					}
					synctest.Wait()
					for _, w := range ws {
						require.False(t, w.IsDone(), "a waiter must be queued, not rejected")
					}
					over := r.submit(key, relOK)
					require.Equal(t, groupconc.StatusRejected, over.Wait().Status, "the queue is full")
					return ws
				}

				// Round 1: Cancel, caller ctx, caller deadline.
				ctx, cancel := context.WithCancel(r.ctx)
				dctx, dcancel := context.WithTimeout(r.ctx, time.Second)
				defer dcancel()
				ws := []*groupconc.TaskHandle[int]{
					r.submit(key, relBlock(gate)),
					r.submitCtx(ctx, key, relBlock(gate)),
					r.submitCtx(dctx, key, relBlock(gate)),
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

// S14: a caller-runs task runs without permits, on its own goroutine: its
// panic becomes its FAILED result (never the Submit caller's), it holds and
// releases no permit, and it is counted in no running stat. After Shutdown
// has begun there is no caller-runs: Submit returns ErrClosed.
func TestS14CallerRunsPanicStaysOnTheTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).RejectionPolicy(groupconc.RejectCallerRuns))
		gate, crGate := make(chan struct{}), make(chan struct{})
		r.submit("a", relBlock(gate))
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
}

// S14: a caller-runs task accepted before Shutdown is drained like any
// other; once Shutdown has begun nothing runs inline: Submit returns
// ErrClosed.
func TestS14CallerRunsAfterShutdownBeganIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).RejectionPolicy(groupconc.RejectCallerRuns))
		gate, crGate := make(chan struct{}), make(chan struct{})
		r.submit("a", relBlock(gate))
		cr := r.submit("a", relBlock(crGate)) // rejected: runs without permits
		synctest.Wait()
		require.True(t, r.started(cr))

		var shutdownErr error
		shutdownDone := make(chan struct{})
		go func() {
			defer close(shutdownDone)
			shutdownErr = r.e.Shutdown(context.Background())
		}()
		synctest.Wait()
		var ran atomic.Bool
		_, err := oracleSubmit(r.o, r.ctx, r.e, "a", "late", func(context.Context) (int, error) { ran.Store(true); return 0, nil })
		assert.ErrorIs(t, err, groupconc.ErrClosed)
		close(gate)
		synctest.Wait()
		select {
		case <-shutdownDone:
			t.Fatal("Shutdown returned while a caller-runs task was still running")
		default:
		}
		close(crGate)
		<-shutdownDone
		require.NoError(t, shutdownErr)
		r.o.seal()
		synctest.Wait()
		assert.False(t, ran.Load(), "nothing runs inline after Shutdown began")
		assert.Equal(t, groupconc.StatusSuccess, cr.Wait().Status)
		r.o.checkAll(t, r.e, oracleLimitsOf(r.p))
	})
}

// S15: a custom rejection handler that re-enters the executor, panics, or
// blocks until its context ends: no deadlock, no escaped panic, Close still
// returns, and the executor keeps working.
func TestS15RejectionHandlerThatResubmits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r *relEnv
		var depth atomic.Int32
		b := relBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).
			RejectionHandler(func(ctx context.Context, rj *groupconc.Rejection) (any, error) {
				key := "overflow"
				if depth.Add(1) <= 3 {
					key = rj.GroupKey // re-enter the same saturated group: rejected again
				}
				h, err := oracleSubmit(r.o, ctx, r.e, key, rj.TaskID+"+", relOK)
				if err != nil {
					return nil, err
				}
				res, err := h.Await(ctx)
				if err != nil {
					return nil, err
				}
				return res.Value, res.Err
			})
		r = relNew(t, b)
		r.o.handler = true
		gate := make(chan struct{})
		r.submit("a", relBlock(gate))
		synctest.Wait()
		h := r.submit("a", relOK)
		synctest.Wait()
		assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, "the handler's re-submission ran in the overflow group")
		close(gate)
		r.finish()
	})
}

func TestS15RejectionHandlerThatPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := relBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).
			RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) { panic("handler boom") })
		r := relNew(t, b)
		r.o.handler = true
		gate := make(chan struct{})
		r.submit("a", relBlock(gate))
		synctest.Wait()
		h := r.submit("a", relOK)
		res := h.Wait()
		assert.Equal(t, groupconc.StatusFailed, res.Status)
		var pe *groupconc.PanicError
		require.ErrorAs(t, res.Err, &pe)
		assert.Equal(t, "handler boom", pe.Value)
		close(gate)
		synctest.Wait()
		assert.Equal(t, groupconc.StatusSuccess, r.submit("a", relOK).Wait().Status, "the executor still works")
		r.finish()
	})
}

func TestS15RejectionHandlerThatBlocksDoesNotBlockClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := relBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).
			RejectionHandler(func(ctx context.Context, _ *groupconc.Rejection) (any, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			})
		r := relNew(t, b)
		r.o.handler = true
		gate := make(chan struct{})
		r.submit("a", relBlockCtx(gate))
		h := r.submit("a", relOK)
		synctest.Wait()
		require.False(t, h.IsDone(), "the handler blocks")
		start := time.Now()
		require.NoError(t, r.e.Close())
		assert.Zero(t, time.Since(start), "Close returns at once")
		res := h.Wait()
		assert.Equal(t, groupconc.StatusCancelled, res.Status, "the handler returned its context's error")
		r.finish()
	})
}

// ---------------------------------------------------------------------------
// D. Task body behaviour

// S16: a panic in the function becomes FAILED with a *PanicError carrying
// the value and the stack, releases every permit, and fires OnCompleted.
func TestS16PanicBecomesFailedWithValueAndStack(t *testing.T) {
	sentinel := errors.New("sentinel")
	cases := []struct {
		name  string
		value any
		check func(t *testing.T, pe *groupconc.PanicError, err error)
	}{
		{"string", "x", func(t *testing.T, pe *groupconc.PanicError, _ error) { assert.Equal(t, "x", pe.Value) }},
		{"error", sentinel, func(t *testing.T, pe *groupconc.PanicError, err error) {
			assert.ErrorIs(t, err, sentinel, "errors.Is sees through panic(err)")
		}},
		{"nil", nil, func(t *testing.T, pe *groupconc.PanicError, _ error) {
			var pn *runtime.PanicNilError
			assert.ErrorAs(t, pe.Value.(error), &pn, "panic(nil) recovers as *runtime.PanicNilError")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := relNew(t, relBuilder().GlobalMaxInFlight(2).DefaultMaxInFlightPerGroup(2).DefaultMaxConcurrencyPerGroup(1))
				h := r.submit("a", func(context.Context) (int, error) { panic(c.value) })
				res := h.Wait()
				assert.Equal(t, groupconc.StatusFailed, res.Status)
				var pe *groupconc.PanicError
				require.ErrorAs(t, res.Err, &pe)
				assert.Contains(t, string(pe.Stack), "panic", "the stack is kept")
				assert.Contains(t, string(pe.Stack), "TestS16", "the stack shows the panicking function")
				c.check(t, pe, res.Err)
				synctest.Wait()
				require.NoError(t, r.e.Quiescent())
				r.finish()
			})
		})
	}
}

func TestS16WholeGroupPanickingDoesNotStrandQueuedTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(2).GlobalMaxInFlight(3))
		gate := make(chan struct{})
		var hs []*groupconc.TaskHandle[int]
		for range 8 {
			hs = append(hs, r.submit("a", func(context.Context) (int, error) { <-gate; panic("all of them") }))
		}
		synctest.Wait()
		require.Equal(t, 2, r.countStarted(hs...))
		close(gate)
		synctest.Wait()
		for _, h := range hs {
			assert.Equal(t, groupconc.StatusFailed, h.Wait().Status)
			assert.True(t, r.started(h), "every queued task still ran")
		}
		r.finish()
	})
}

// S17: runtime.Goexit in the function (t.FailNow, gomock) becomes FAILED;
// the handle, the queue behind it and Shutdown never hang.
func TestS17GoexitBecomesFailedAndDoesNotHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(1))
		h := r.submit("a", func(context.Context) (int, error) { runtime.Goexit(); return 0, nil })
		next := r.submit("a", relOK)
		ctx, cancel := context.WithTimeout(r.ctx, time.Second)
		defer cancel()
		res, err := h.Await(ctx)
		require.NoError(t, err, "I7: Await must return the result, not time out")
		assert.Equal(t, groupconc.StatusFailed, res.Status)
		var pe *groupconc.PanicError
		require.ErrorAs(t, res.Err, &pe)
		assert.Contains(t, res.Err.Error(), "Goexit")
		assert.Equal(t, groupconc.StatusSuccess, next.Wait().Status, "the task queued behind it runs")
		synctest.Wait()
		require.NoError(t, r.e.Quiescent())
		r.finish()
	})
}

// S18: a task that awaits another task of its own saturated group can only
// end by its deadline: Await returns DeadlineExceeded after exactly that
// long, and then both finish. Without a deadline, Close resolves both.
func TestS18NestedAwaitOnSaturatedGroupEndsByDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(1))
		var child *groupconc.TaskHandle[int]
		var waited time.Duration
		parent := r.submit("a", func(ctx context.Context) (int, error) {
			child = r.submit("a", relOK)
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			start := time.Now()
			_, err := child.Await(actx)
			waited = time.Since(start)
			return 0, err
		})
		res := parent.Wait()
		assert.Equal(t, 5*time.Second, waited)
		assert.Equal(t, groupconc.StatusFailed, res.Status, "the parent's own context is not done: its DeadlineExceeded is a failure")
		assert.ErrorIs(t, res.Err, context.DeadlineExceeded)
		assert.Equal(t, groupconc.StatusSuccess, child.Wait().Status, "the child runs once the parent lets go")
		r.finish()
	})
}

func TestS18NestedWaitWithoutDeadlineIsResolvedByClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(1))
		childCh := make(chan *groupconc.TaskHandle[int], 1)
		parent := r.submit("a", func(ctx context.Context) (int, error) {
			child := r.submit("a", relOK)
			childCh <- child
			return child.Wait().Value, nil
		})
		child := <-childCh
		time.Sleep(time.Hour)
		synctest.Wait()
		require.False(t, parent.IsDone(), "self-deadlock, as documented")
		require.NoError(t, r.e.Close())
		synctest.Wait()
		assert.Equal(t, groupconc.StatusCancelled, child.Wait().Status)
		assert.Equal(t, groupconc.StatusSuccess, parent.Wait().Status)
		r.finish()
	})
}

// S19: listeners that panic in every event, re-enter the executor, or
// block: no escaped panic, no lock held (re-entry works), Close returns
// while one blocks, and every task's events still balance.
func TestS19ListenerThatPanicsInEveryEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := groupconc.ListenerFuncs{
			Submitted: func(string, string) { panic("submitted") },
			Started:   func(string, string) { panic("started") },
			Completed: func(string, string, groupconc.GroupResult[any]) { panic("completed") },
			Rejected:  func(string, string, string) { panic("rejected") },
		}
		r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(1).RejectionPolicy(groupconc.RejectCallerRuns), boom)
		gate := make(chan struct{})
		var hs []*groupconc.TaskHandle[int]
		for range 4 { // 1 runs, 1 waits, 2 caller-run
			hs = append(hs, r.submit("a", relBlock(gate)))
		}
		ctx, cancel := context.WithCancel(r.ctx)
		cancel()
		hs = append(hs, r.submitCtx(ctx, "a", relOK)) // cancelled at Submit
		synctest.Wait()
		close(gate)
		for _, h := range hs {
			h.Wait()
		}
		r.finish()
	})
}

func TestS19ListenerThatReentersTheExecutor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r *relEnv
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
					_, err := oracleSubmit(r.o, context.Background(), r.e, "b", id+"+", relOK)
					assert.NoError(t, err)
				}
				if g == "b" {
					r.e.ShutdownGroup("b")
				}
			},
		}
		r = relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(2), reenter)
		for range 5 {
			r.submit("a", relOK)
		}
		synctest.Wait()
		assert.EqualValues(t, 5, follow.Load())
		r.finish()
	})
}

func TestS19ListenerThatBlocksDoesNotBlockClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		unblock := make(chan struct{})
		r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(1), groupconc.ListenerFuncs{
			Started: func(g, _ string) {
				if g == "slow" {
					<-unblock
				}
			},
		})
		slow := r.submit("slow", relOK)
		fast := r.submit("fast", relOK)
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
}

// S19 (Goexit): a listener that calls runtime.Goexit (t.FailNow in a test
// listener) in OnStarted. The design recovers listener panics, and for the
// task function it turns Goexit into FAILED so the handle never hangs; the
// same must hold when the listener does it on the task's goroutine: the
// permits must come back and the handle must complete.
func TestS19ListenerGoexitDoesNotStrandTheTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(1), groupconc.ListenerFuncs{
			Started: func(g, _ string) {
				if g == "goexit" {
					runtime.Goexit()
				}
			},
		})
		h := r.submit("goexit", relOK)
		next := r.submit("goexit", relOK)
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
}

// ---------------------------------------------------------------------------
// E. Lifecycle: Submit versus Shutdown/Close, handles

// S20: Submit racing Shutdown. The gate is one atomic word (CAS on enter),
// so there is no window between the closed check and the count to park a
// hook in; instead many real-time rounds race submitters against Shutdown
// and check the contract on every Submit: it returns ErrClosed, or its task
// is drained (handle complete, no event) by the time Shutdown returns; no
// function runs after Shutdown returned; nothing panics.
func TestS20SubmitRacingShutdownIsRefusedOrDrained(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		relS20Round(t, round, false)
	}
}

// S20 with Close: Submit never panics, every accepted task still completes
// (Close cancels; Shutdown afterwards joins), and a Submit that starts after
// Close returned gets ErrClosed.
func TestS20SubmitRacingCloseNeverPanics(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 10
	}
	for round := range rounds {
		relS20Round(t, round, true)
	}
}

func relS20Round(t *testing.T, round int, useClose bool) {
	t.Helper()
	o := newOracle()
	p, err := relBuilder().GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(2).
		DefaultQueueThresholdPerGroup(8).RejectionPolicy(groupconc.RejectionPolicy(round % 3)).
		TaskLifecycleListener(o.rec).Build()
	require.NoError(t, err)
	e := groupconc.New(p)
	var stopped atomic.Bool // Shutdown/Close has returned
	var lateRun atomic.Int32
	const submitters = 4
	start := make(chan struct{})
	enough := make(chan struct{}, submitters)
	var wg sync.WaitGroup
	for s := range submitters {
		wg.Go(func() {
			<-start
			for i := range 48 {
				before := stopped.Load()
				var h *groupconc.TaskHandle[int]
				var err error
				o.guard(t, "Submit", func() {
					h, err = oracleSubmit(o, context.Background(), e, fmt.Sprintf("g%d", i%3), fmt.Sprintf("s%d-%d", s, i), func(ctx context.Context) (int, error) {
						if !useClose && stopped.Load() {
							lateRun.Add(1)
						}
						runtime.Gosched()
						return i, nil
					})
				})
				if err != nil {
					assert.ErrorIs(t, err, groupconc.ErrClosed)
					return
				}
				if before {
					t.Errorf("round %d: Submit accepted a task after %s returned", round, map[bool]string{false: "Shutdown", true: "Close"}[useClose])
					return
				}
				if !useClose && stopped.Load() && !h.IsDone() {
					t.Errorf("round %d: an accepted task is not complete after Shutdown returned", round)
				}
				if i == 8 {
					enough <- struct{}{}
				}
			}
		})
	}
	close(start)
	<-enough // the first submitter is well under way; the others race the stop
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if useClose {
		o.guard(t, "Close", func() { require.NoError(t, e.Close()) })
		stopped.Store(true)
		o.guard(t, "Shutdown", func() { require.NoError(t, e.Shutdown(ctx), "join after Close") })
	} else {
		o.guard(t, "Shutdown", func() { require.NoError(t, e.Shutdown(ctx)) })
		stopped.Store(true)
		o.seal()
	}
	wg.Wait()
	assert.Zero(t, lateRun.Load(), "round %d: a function ran after Shutdown returned", round)
	o.awaitAll(t, ctx)
	o.checkAll(t, e, oracleLimitsOf(p))
}

// S21: Close returns while tasks are still waiting or running; once their
// functions return (here: as soon as they see their context cancelled), no
// goroutine of the executor is left: the bubble must be empty when
// synctest.Test returns, without any join.
func TestS21CloseLeavesNoGoroutineBehind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(3).GlobalMaxInFlight(10))
		var hs []*groupconc.TaskHandle[int]
		for i := range 100 {
			hs = append(hs, r.submit(fmt.Sprintf("g%d", i%7), func(ctx context.Context) (int, error) {
				select {
				case <-time.After(time.Duration(1+i%5) * time.Millisecond):
					return i, nil
				case <-ctx.Done():
					return 0, ctx.Err()
				}
			}))
		}
		time.Sleep(2 * time.Millisecond) // fake clock: some tasks end, some run on
		require.NoError(t, r.e.Close())
		synctest.Wait()
		for _, h := range hs {
			require.True(t, h.IsDone())
		}
		r.o.checkAll(t, r.e, oracleLimitsOf(r.p))
		// No Shutdown, no Wait: the end of the bubble is the leak check (I5).
	})
}

// S22: Close wakes every task blocked at any layer: every handle ends
// CANCELLED (or FAILED), no permit is left held, and Submit afterwards
// returns ErrClosed.
func TestS22CloseWakesEveryBlockedTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().GlobalMaxInFlight(2).DefaultMaxConcurrencyPerGroup(1).DefaultMaxInFlightPerGroup(2))
		gate := make(chan struct{})
		var hs []*groupconc.TaskHandle[int]
		for i := range 20 {
			hs = append(hs, r.submit(fmt.Sprintf("g%d", i%4), relBlockCtx(gate)))
		}
		synctest.Wait()
		require.Equal(t, 2, r.countStarted(hs...))
		require.NoError(t, r.e.Close())
		synctest.Wait()
		for _, h := range hs {
			res := h.Wait()
			assert.Contains(t, []groupconc.TaskStatus{groupconc.StatusCancelled, groupconc.StatusFailed}, res.Status)
			if !r.started(h) { // a running one returned its own ctx.Err(), unwrapped
				assert.ErrorIs(t, res.Err, groupconc.ErrClosed, "the cause is kept")
			}
		}
		_, err := oracleSubmit(r.o, r.ctx, r.e, "g0", "after", relOK)
		assert.ErrorIs(t, err, groupconc.ErrClosed)
		r.o.checkAll(t, r.e, oracleLimitsOf(r.p))
		close(gate)
	})
}

// S23: Shutdown returns DeadlineExceeded exactly at its deadline while a
// task (ignoring its context) still runs, and cancels what remains; a
// concurrent Shutdown without deadline returns nil exactly when the task
// ends; Close afterwards returns; Submit during the drain is refused.
func TestS23ShutdownHonoursItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder())
		var sawCause error
		h := r.submit("a", func(ctx context.Context) (int, error) {
			time.Sleep(10 * time.Second) // simulated work that ignores ctx
			sawCause = context.Cause(ctx)
			return 1, nil
		})
		w := r.submit("a", relOK) // waits for a's single permit
		start := time.Now()
		var bgErr error
		var bgAt time.Duration
		bgDone := make(chan struct{})
		go func() {
			defer close(bgDone)
			bgErr = r.e.Shutdown(context.Background())
			bgAt = time.Since(start)
		}()
		ctx, cancel := context.WithTimeout(r.ctx, time.Second)
		defer cancel()
		err := r.e.Shutdown(ctx)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(start), "Shutdown returns exactly at its deadline")
		assert.False(t, h.IsDone(), "the running task goes on")
		synctest.Wait()
		res := w.Wait()
		assert.Equal(t, groupconc.StatusCancelled, res.Status, "the expired Shutdown cancels the waiting task")
		assert.ErrorIs(t, res.Err, groupconc.ErrClosed)
		_, err = oracleSubmit(r.o, r.ctx, r.e, "b", "during", relOK)
		assert.ErrorIs(t, err, groupconc.ErrClosed, "Submit during the drain is refused")

		<-bgDone
		assert.NoError(t, bgErr)
		assert.Equal(t, 10*time.Second, bgAt, "a Shutdown without deadline returns when the last task ends")
		assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, "a task that ignores its context finishes normally")
		assert.ErrorIs(t, sawCause, groupconc.ErrClosed, "its context was cancelled with ErrClosed")
		assert.NoError(t, r.e.Close())
		r.finish()
	})
}

func TestS23ConcurrentShutdownsAllReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(2))
		gate := make(chan struct{})
		for i := range 6 {
			r.submit(fmt.Sprintf("g%d", i%2), relBlock(gate))
		}
		errs := make(chan error, 5)
		for range 5 {
			go func() { errs <- r.e.Shutdown(context.Background()) }()
		}
		synctest.Wait()
		assert.Empty(t, errs, "no Shutdown returns while tasks run")
		close(gate)
		for range 5 {
			assert.NoError(t, <-errs)
		}
		assert.NoError(t, r.e.Close())
		r.finish()
	})
}

// S23: on an executor with nothing left to drain, Shutdown returns nil even
// if its context is already done: the drain is complete, so "ctx ends
// first" is false (net/http's Server.Shutdown checks for idleness first, too).
func TestS23ShutdownOfDrainedExecutorReturnsNilEvenWithDoneContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for i := range 64 {
			r := relNew(t, relBuilder())
			r.submit("a", relOK).Wait()
			synctest.Wait()
			ctx, cancel := context.WithCancel(r.ctx)
			cancel()
			if err := r.e.Shutdown(ctx); err != nil {
				t.Errorf("attempt %d: Shutdown of a drained executor returned %v, want nil", i, err)
				return
			}
		}
	})
}

// S24: an Await whose context ends returns CANCELLED and ctx.Err() without
// touching the task; all other awaiters see the same real result; one
// completed event.
func TestS24AwaitTimeoutsDoNotAffectTheTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder())
		gate := make(chan struct{})
		h := r.submit("a", func(context.Context) (int, error) { <-gate; return 42, nil })
		type got struct {
			res groupconc.GroupResult[int]
			err error
		}
		results := make(chan got, 10)
		for i := range 10 {
			go func() {
				ctx := r.ctx
				if i < 2 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Second)
					defer cancel()
				}
				res, err := h.Await(ctx)
				results <- got{res, err}
			}()
		}
		time.Sleep(2 * time.Second) // fake clock: the Await deadlines pass
		synctest.Wait()
		require.Len(t, results, 2, "only the short-deadline awaiters returned")
		for range 2 {
			g := <-results
			assert.Equal(t, groupconc.StatusCancelled, g.res.Status)
			assert.ErrorIs(t, g.err, context.DeadlineExceeded)
		}
		assert.False(t, h.IsDone(), "the awaiters' deadlines did not cancel the task")
		close(gate)
		for range 8 {
			g := <-results
			assert.NoError(t, g.err)
			assert.Equal(t, groupconc.StatusSuccess, g.res.Status)
			assert.Equal(t, 42, g.res.Value)
		}
		assert.False(t, h.Cancel(), "Cancel after completion reports false")
		assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, "and does not overwrite the result")
		r.finish()
	})
}

// S24: two Cancels racing the function's return: at most one Cancel wins;
// the result is CANCELLED exactly when one did; the listener hears one
// completed event carrying the handle's status.
func TestS24CancelRacingCompletionYieldsOneResult(t *testing.T) {
	for i := range 100 {
		synctest.Test(t, func(t *testing.T) {
			r := relNew(t, relBuilder())
			gate := make(chan struct{})
			h := r.submit("a", func(context.Context) (int, error) { <-gate; return 1, nil })
			synctest.Wait()
			var wins atomic.Int32
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					if h.Cancel() {
						wins.Add(1)
					}
				})
			}
			if i%2 == 0 {
				runtime.Gosched()
			}
			close(gate)
			wg.Wait()
			res := h.Wait()
			assert.LessOrEqual(t, wins.Load(), int32(1))
			if wins.Load() == 1 {
				assert.Equal(t, groupconc.StatusCancelled, res.Status)
				assert.Equal(t, context.Canceled, res.Err)
			} else {
				assert.Equal(t, groupconc.StatusSuccess, res.Status)
			}
			r.finish()
		})
	}
}

// S24: Await with a nil context waits like Wait and returns the same error
// as a live context would, also for a task that is rejected later, after
// waiting at the global layer (the *RejectedError is published with the
// result, and must be read after it).
func TestS24AwaitVariantsAgreeOnALateRejection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().GlobalMaxInFlight(2).DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0))
		aGate, bGate := make(chan struct{}), make(chan struct{})
		r.submit("a", relBlock(aGate))
		r.submit("b", relBlock(bGate))
		synctest.Wait()
		x := r.submit("a", relOK) // waits at the global layer, is rejected at a's
		var nilCtx context.Context
		type got struct {
			res groupconc.GroupResult[int]
			err error
		}
		viaNil, viaCtx := make(chan got, 1), make(chan got, 1)
		go func() { res, err := x.Await(nilCtx); viaNil <- got{res, err} }()
		go func() { res, err := x.Await(r.ctx); viaCtx <- got{res, err} }()
		synctest.Wait()
		require.False(t, x.IsDone())
		close(bGate)
		a, b := <-viaNil, <-viaCtx
		assert.Equal(t, groupconc.StatusRejected, a.res.Status)
		assert.ErrorIs(t, a.err, groupconc.ErrRejected, "Await(nil) returns the *RejectedError")
		assert.Equal(t, b.err, a.err)
		assert.Equal(t, b.res.Status, a.res.Status)
		close(aGate)
		r.finish()
	})
}

// S25: bad limits fail at Build, each naming its field, wrapping
// ErrInvalidPolicy; extreme valid values build; a zero queue threshold means
// "never wait" and finishes without blocking; a per-group limit above the
// global cap is bounded by it.
func TestS25BadLimitsAreRejectedAtBuild(t *testing.T) {
	bad := []struct {
		field string
		set   func(*groupconc.PolicyBuilder)
	}{
		{"DefaultMaxConcurrencyPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultMaxConcurrencyPerGroup(0) }},
		{"DefaultMaxConcurrencyPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultMaxConcurrencyPerGroup(-1) }},
		{"GlobalMaxInFlight", func(b *groupconc.PolicyBuilder) { b.GlobalMaxInFlight(0) }},
		{"GlobalMaxInFlight", func(b *groupconc.PolicyBuilder) { b.GlobalMaxInFlight(-5) }},
		{"DefaultMaxInFlightPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultMaxInFlightPerGroup(0) }},
		{"GlobalQueueThreshold", func(b *groupconc.PolicyBuilder) { b.GlobalQueueThreshold(-1) }},
		{"DefaultQueueThresholdPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultQueueThresholdPerGroup(-1) }},
		{"PerGroupMaxConcurrency", func(b *groupconc.PolicyBuilder) { b.PerGroupMaxConcurrency(map[string]int{"a": 0}) }},
		{"PerGroupMaxInFlight", func(b *groupconc.PolicyBuilder) { b.PerGroupMaxInFlight(map[string]int{"a": -1}) }},
		{"PerGroupQueueThreshold", func(b *groupconc.PolicyBuilder) { b.PerGroupQueueThreshold(map[string]int{"a": -1}) }},
		{"PerGroupMaxConcurrency", func(b *groupconc.PolicyBuilder) { b.PerGroupMaxConcurrency(map[string]int{"": 1}) }},
		{"GlobalMaxInFlight", func(b *groupconc.PolicyBuilder) { b.GlobalMaxInFlight(-1 << 63) }},
		{"RejectionPolicy", func(b *groupconc.PolicyBuilder) { b.RejectionPolicy(groupconc.RejectionPolicy(7)) }},
	}
	for _, c := range bad {
		b := relBuilder()
		c.set(b)
		var p *groupconc.GroupPolicy
		var err error
		require.NotPanics(t, func() { p, err = b.Build() })
		assert.Nil(t, p)
		assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
		if err != nil {
			assert.Contains(t, err.Error(), c.field)
		}
	}
	// Two bad fields: one error naming both.
	_, err := relBuilder().GlobalMaxInFlight(0).DefaultQueueThresholdPerGroup(-1).Build()
	require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
	assert.Contains(t, err.Error(), "GlobalMaxInFlight")
	assert.Contains(t, err.Error(), "DefaultQueueThresholdPerGroup")

	// Extreme but valid.
	p, err := relBuilder().GlobalMaxInFlight(groupconc.Unlimited - 1).DefaultMaxConcurrencyPerGroup(groupconc.Unlimited).
		DefaultMaxInFlightPerGroup(1).GlobalQueueThreshold(0).DefaultQueueThresholdPerGroup(groupconc.Unlimited).Build()
	require.NoError(t, err)
	assert.Equal(t, groupconc.Unlimited-1, p.GlobalMaxInFlight())
	// The zero-value and nil policies are the default one.
	var zero groupconc.GroupPolicy
	var nilPolicy *groupconc.GroupPolicy
	for _, q := range []*groupconc.GroupPolicy{&zero, nilPolicy} {
		assert.Equal(t, 1, q.ResolveConcurrency("x"))
		assert.Equal(t, groupconc.Unlimited, q.ResolveMaxInFlight("x"))
		assert.Equal(t, groupconc.Unlimited, q.ResolveQueueThreshold("x"))
	}
}

func TestS25ZeroQueueThresholdRejectsWithoutBlocking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().GlobalMaxInFlight(1).GlobalQueueThreshold(0).DefaultQueueThresholdPerGroup(0))
		gate := make(chan struct{})
		r.submit("a", relBlock(gate))
		start := time.Now()
		for i := range 10 {
			h := r.submit(fmt.Sprintf("g%d", i%3), relOK)
			require.True(t, h.IsDone(), "rejected inside Submit")
			assert.Equal(t, groupconc.StatusRejected, h.Wait().Status)
		}
		assert.Zero(t, time.Since(start))
		close(gate)
		r.finish()
	})
}

func TestS25PerGroupLimitAboveGlobalIsBoundedByGlobal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().GlobalMaxInFlight(2).DefaultMaxConcurrencyPerGroup(5).DefaultMaxInFlightPerGroup(10))
		gate := make(chan struct{})
		for range 8 {
			r.submit("a", relBlock(gate))
		}
		synctest.Wait()
		assert.EqualValues(t, 2, r.o.globalMax())
		close(gate)
		r.finish()
	})
}

// S26: no overshoot from check-then-act. Each layer is taken by TryAcquire
// or Acquire on a semaphore, whose check and commit are one step under its
// mutex, so there is no window for a hook; instead a real-time start-gate
// stampede of 500 Submits checks max <= cap, and a gated synctest run
// checks that every permit is actually used (none stuck).
func TestS26StampedeNeverExceedsCaps(t *testing.T) {
	rounds := 10
	if testing.Short() {
		rounds = 2
	}
	for range rounds {
		o := newOracle()
		p, err := relBuilder().GlobalMaxInFlight(8).DefaultMaxInFlightPerGroup(4).DefaultMaxConcurrencyPerGroup(3).
			PerGroupMaxConcurrency(map[string]int{"g0": 1}).TaskLifecycleListener(o.rec).Build()
		require.NoError(t, err)
		e := groupconc.New(p)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for s := range 50 {
			wg.Go(func() {
				<-start
				for i := range 10 {
					_, err := oracleSubmit(o, context.Background(), e, fmt.Sprintf("g%d", (s+i)%5), fmt.Sprintf("s%d-%d", s, i), func(context.Context) (int, error) {
						runtime.Gosched()
						return 0, nil
					})
					assert.NoError(t, err)
				}
			})
		}
		close(start)
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		require.NoError(t, e.Shutdown(ctx))
		cancel()
		o.seal()
		o.checkAll(t, e, oracleLimitsOf(p))
	}
}

func TestS26GatedStampedeReachesExactlyTheCaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder().GlobalMaxInFlight(8).DefaultMaxInFlightPerGroup(4).DefaultMaxConcurrencyPerGroup(3))
		start, gate := make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		for s := range 50 {
			wg.Go(func() {
				<-start
				for i := range 10 {
					_, err := oracleSubmit(r.o, r.ctx, r.e, fmt.Sprintf("g%d", (s+i)%5), fmt.Sprintf("s%d-%d", s, i), relBlock(gate))
					assert.NoError(t, err)
				}
			})
		}
		close(start)
		wg.Wait()
		synctest.Wait()
		// Every global permit is taken. Not every holder need run: a task
		// keeps its global permit while it waits for its own group's
		// bulkhead or concurrency permit (the documented layer order), so
		// when the racing submitters happen to bring four tasks of one group
		// among the first eight, one of them holds a global permit and
		// waits. What must hold is that such a task waits only for a full
		// layer of its own group: a group with a task past the bulkhead
		// that does not run is at its concurrency cap, and the running
		// tasks seen by the gauges are exactly those the counts report.
		s := r.e.Stats()
		assert.Equal(t, 8, s.GlobalInFlight, "global permits taken")
		running, inFlight, bulkheadFull := 0, 0, false
		for _, k := range []string{"g0", "g1", "g2", "g3", "g4"} {
			gs, ok := r.e.GroupStats(k)
			require.True(t, ok)
			running += gs.Running
			inFlight += gs.InFlight
			bulkheadFull = bulkheadFull || gs.InFlight == 4
			if gs.InFlight > gs.Running {
				assert.Equal(t, 3, gs.Running, "group %s has a task waiting past the bulkhead", k)
			}
		}
		if s.GlobalInFlight > inFlight {
			assert.True(t, bulkheadFull, "%d tasks hold a global permit and wait for a bulkhead, none full", s.GlobalInFlight-inFlight)
		}
		assert.Equal(t, s.Running, running)
		assert.EqualValues(t, s.Running, r.o.globalMax())
		r.o.checkStill(t, r.e, r.p, []string{"g0", "g1", "g2", "g3", "g4"})
		close(gate)
		r.finish()
	})
}

// S27: every cancellation route keeps its cause, for a task cancelled while
// waiting (its result's Err) and for a running one (context.Cause of its
// context). ShutdownGroup and EvictGroup causes are unexported errors in
// this design, so they are matched by message.
func TestS27CancellationKeepsItsCause(t *testing.T) {
	callerCause := errors.New("caller's own cause")
	routes := []struct {
		name string
		// cancel cancels the tasks of group "a" submitted with ctx/cancel.
		cancel func(r *relEnv, cancel context.CancelCauseFunc, hs []*groupconc.TaskHandle[int])
		match  func(t *testing.T, err error)
	}{
		{"Close", func(r *relEnv, _ context.CancelCauseFunc, _ []*groupconc.TaskHandle[int]) { r.e.Close() },
			func(t *testing.T, err error) { assert.ErrorIs(t, err, groupconc.ErrClosed) }},
		{"ShutdownExpired", func(r *relEnv, _ context.CancelCauseFunc, _ []*groupconc.TaskHandle[int]) {
			ctx, cancel := context.WithTimeout(r.ctx, time.Second)
			defer cancel()
			assert.ErrorIs(t, r.e.Shutdown(ctx), context.DeadlineExceeded)
		}, func(t *testing.T, err error) { assert.ErrorIs(t, err, groupconc.ErrClosed) }},
		{"ShutdownGroup", func(r *relEnv, _ context.CancelCauseFunc, _ []*groupconc.TaskHandle[int]) { r.e.ShutdownGroup("a") },
			func(t *testing.T, err error) { assert.ErrorIs(t, err, groupconc.ErrGroupShutdown) }},
		{"EvictGroup", func(r *relEnv, _ context.CancelCauseFunc, _ []*groupconc.TaskHandle[int]) { r.e.EvictGroup("a") },
			func(t *testing.T, err error) { assert.ErrorIs(t, err, groupconc.ErrGroupEvicted) }},
		{"CallerCause", func(_ *relEnv, cancel context.CancelCauseFunc, _ []*groupconc.TaskHandle[int]) { cancel(callerCause) },
			func(t *testing.T, err error) { assert.ErrorIs(t, err, callerCause) }},
	}
	for _, route := range routes {
		t.Run(route.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := relNew(t, relBuilder())
				ctx, cancel := context.WithCancelCause(r.ctx)
				defer cancel(nil)
				seen := make(chan error, 1)
				release := make(chan struct{})
				running := r.submitCtx(ctx, "a", func(ctx context.Context) (int, error) {
					<-ctx.Done()
					seen <- context.Cause(ctx)
					<-release // keep the permit until the waiter has seen its cancellation
					return 0, ctx.Err()
				})
				waiting := r.submitCtx(ctx, "a", relOK)
				synctest.Wait()
				require.True(t, r.started(running))
				route.cancel(r, cancel, []*groupconc.TaskHandle[int]{running, waiting})
				synctest.Wait()
				close(release)
				synctest.Wait()
				res := waiting.Wait()
				assert.Equal(t, groupconc.StatusCancelled, res.Status)
				assert.ErrorIs(t, res.Err, context.Canceled)
				route.match(t, res.Err)
				route.match(t, <-seen)
				assert.Equal(t, groupconc.StatusCancelled, running.Wait().Status)
				r.finish()
			})
		})
	}
}

// S27: a caller's deadline shows as DeadlineExceeded, inside the function
// (ctx.Err) and on a task that was still waiting; Cancel shows as Canceled.
func TestS27DeadlineAndCancelAreTold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := relNew(t, relBuilder())
		ctx, cancel := context.WithTimeout(r.ctx, time.Second)
		defer cancel()
		inside := make(chan error, 1)
		release := make(chan struct{})
		running := r.submitCtx(ctx, "a", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			inside <- ctx.Err()
			<-release // hold the permit until the waiter has seen its deadline
			return 0, ctx.Err()
		})
		waiting := r.submitCtx(ctx, "a", relOK)
		time.Sleep(2 * time.Second) // fake clock: the deadline passes
		synctest.Wait()
		close(release)
		assert.ErrorIs(t, <-inside, context.DeadlineExceeded, "the function sees the caller's deadline")
		assert.ErrorIs(t, waiting.Wait().Err, context.DeadlineExceeded)
		assert.Equal(t, groupconc.StatusCancelled, running.Wait().Status)

		causes := make(chan error, 1)
		h := r.submit("b", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return 0, ctx.Err()
		})
		synctest.Wait()
		require.True(t, h.Cancel())
		assert.Equal(t, context.Canceled, h.Wait().Err)
		assert.ErrorIs(t, <-causes, context.Canceled)
		r.finish()
	})
}

// S5 (the hand-off window): with a layer of 2 permits, two tasks waiting in
// line and both holders returning, a task submitted in the same moment must
// not take a permit ahead of the waiters, even while the second waiter has
// been handed its permit and not yet been carried on to run.
// The window is a real race, so it is run many times with varied yields.
func TestS05NewcomerNeverPassesWaitersDuringHandOff(t *testing.T) {
	passed := 0
	for i := range 300 {
		synctest.Test(t, func(t *testing.T) {
			r := relNew(t, relBuilder().DefaultMaxConcurrencyPerGroup(2))
			g1, g2, wGate := make(chan struct{}), make(chan struct{}), make(chan struct{})
			r.submit("a", relBlock(g1))
			r.submit("a", relBlock(g2))
			synctest.Wait()
			w1 := r.submit("a", relBlock(wGate))
			w2 := r.submit("a", relBlock(wGate))
			synctest.Wait()
			close(g1)
			close(g2)
			for range i % 7 {
				runtime.Gosched()
			}
			y := r.submit("a", relBlock(wGate))
			synctest.Wait()
			if r.started(y) {
				passed++
			}
			assert.Equal(t, 2, r.countStarted(w1, w2), "both waiters hold the two permits")
			close(wGate)
			r.finish()
		})
		if t.Failed() {
			break
		}
	}
	assert.Zero(t, passed, "a newcomer passed a waiting task")
}
