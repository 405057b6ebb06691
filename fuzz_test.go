package groupconc_test

// Native fuzzing (RELIABILITY §4.2 item 6). FuzzOps decodes its input into
// an isolation mode, a small policy and a sequence of operations (among them
// UpdatePolicy to another decoded policy, and fake time passing under an
// idle TTL) and runs them inside a synctest bubble (fake time keeps it fast
// and deterministic enough to replay), checking the oracle, with the limits
// in force over time, after every step and at the end. FuzzPolicyBuilder
// checks that any combination of builder settings either builds a policy
// whose Resolve* results follow the rules or fails with ErrInvalidPolicy
// naming each bad field.
//
//	go test -run '^$' -fuzz FuzzOps -fuzztime 2m .
//	go test -run '^$' -fuzz FuzzPolicyBuilder -fuzztime 2m .

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// fuzzBytes hands out the fuzz input one byte at a time, then zeros.
type fuzzBytes struct {
	b []byte
	i int
}

func (r *fuzzBytes) next() byte {
	if r.i >= len(r.b) {
		r.i++
		return 0
	}
	v := r.b[r.i]
	r.i++
	return v
}

func (r *fuzzBytes) done() bool { return r.i >= len(r.b) }

// fuzzPick maps v onto choices.
func fuzzPick[T any](v byte, choices ...T) T { return choices[int(v)%len(choices)] }

const (
	fuzzOpSubmit = iota
	fuzzOpRelease
	fuzzOpReleaseAll
	fuzzOpCancel
	fuzzOpCancelCtx
	fuzzOpAwait
	fuzzOpShutdownGroup
	fuzzOpEvict
	fuzzOpShutdown
	fuzzOpClose
	fuzzOpSleep
	fuzzOpUpdate
	fuzzOpCount
)

// Task behaviours a submit op can ask for.
const (
	fuzzDoSucceed = iota
	fuzzDoFail
	fuzzDoPanic
	fuzzDoGoexit
	fuzzDoBlock    // until its gate opens, ignoring its context
	fuzzDoBlockCtx // until its gate opens or its context ends
	fuzzDoSleep    // fake-time work, ends early when its context ends
	fuzzDoPreCancelled
	fuzzDoCount
)

// fuzzError is the error the failing fuzz and soak tasks return (and
// panic with); errors.Is compares it by value.
type fuzzError struct{}

func (fuzzError) Error() string { return "fuzz task failed" }

// fuzzTask is what the harness knows of one accepted task.
type fuzzTask struct {
	h         *groupconc.TaskHandle[int]
	do        int
	gate      chan struct{}
	cancelCtx context.CancelFunc
	cancelled bool // a Cancel on its handle returned true
}

func FuzzOps(f *testing.F) {
	// An input is a mode byte, the policy's bytes (fuzzPolicy) and the
	// operations. Every seed runs in both modes.
	for _, seed := range [][]byte{
		{},
		// global 1, queue 0..: submits to a, b, c, releases, close
		{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 1, fuzzDoBlock, fuzzOpSubmit, 2, fuzzDoSucceed, fuzzOpRelease, 0, fuzzOpReleaseAll, fuzzOpClose},
		// every behaviour, then Shutdown with a deadline
		{2, 0, 1, 2, 2, 1, 0, 0, 0, 0,
			fuzzOpSubmit, 0, fuzzDoSucceed, fuzzOpSubmit, 0, fuzzDoFail, fuzzOpSubmit, 1, fuzzDoPanic, fuzzOpSubmit, 1, fuzzDoGoexit,
			fuzzOpSubmit, 2, fuzzDoBlock, fuzzOpSubmit, 2, fuzzDoBlockCtx, fuzzOpSubmit, 0, fuzzDoSleep, 3, fuzzOpSubmit, 0, fuzzDoPreCancelled,
			fuzzOpSleep, 5, fuzzOpShutdown, 2, fuzzOpReleaseAll, fuzzOpShutdown, 9},
		// cancels, awaits, group shutdown, eviction
		{0, 0, 0, 1, 1, 2, 0, 0, 0, 0,
			fuzzOpSubmit, 0, fuzzDoBlockCtx, fuzzOpSubmit, 0, fuzzDoBlockCtx, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlockCtx,
			fuzzOpCancel, 1, fuzzOpCancelCtx, 3, fuzzOpAwait, 2, 4, fuzzOpShutdownGroup, 0, fuzzOpSubmit, 0, fuzzDoBlock,
			fuzzOpEvict, 0, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpReleaseAll, fuzzOpSleep, 1},
		// caller-runs and handlers under thresholds 0
		{1, 1, 0, 1, 1, 2, 1, 0, 0, 0, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 1, fuzzDoPanic, fuzzOpSubmit, 2, fuzzDoGoexit, fuzzOpReleaseAll},
		{1, 1, 0, 1, 1, 4, 1, 0, 0, 0, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlockCtx, fuzzOpSubmit, 1, fuzzDoFail, fuzzOpClose, fuzzOpReleaseAll},
		{3, 2, 1, 3, 2, 5, 0, 1, 0, 0, fuzzOpSubmit, 0, fuzzDoSleep, 9, fuzzOpSubmit, 0, fuzzDoSleep, 9, fuzzOpSubmit, 0, fuzzDoSleep, 9, fuzzOpSubmit, 1, fuzzDoSleep, 2, fuzzOpEvict, 0, fuzzOpSleep, 20},
		{2, 1, 0, 1, 2, 3, 0, 0, 0, 0, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 1, fuzzDoBlock, fuzzOpSubmit, 2, fuzzDoBlockCtx, fuzzOpSubmit, 2, fuzzDoBlockCtx, fuzzOpSubmit, 2, fuzzDoBlock, fuzzOpRelease, 1, fuzzOpShutdownGroup, 2, fuzzOpReleaseAll},
		// concurrency 3 lowered to 1 while three run, then raised to
		// Unlimited: the drain, then every waiter at once
		{0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
			fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock,
			fuzzOpUpdate, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
			fuzzOpRelease, 0, fuzzOpRelease, 1, fuzzOpSubmit, 0, fuzzDoBlock,
			fuzzOpUpdate, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, fuzzOpReleaseAll},
		// global 2 lowered to 1 and bulkhead Unlimited to 1 across groups,
		// then back
		{2, 0, 2, 0, 0, 0, 0, 0, 0, 0,
			fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 1, fuzzDoBlock, fuzzOpSubmit, 2, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlockCtx,
			fuzzOpUpdate, 0, 1, 0, 2, 1, 0, 0, 0, 0, 0, 0,
			fuzzOpRelease, 0, fuzzOpSubmit, 1, fuzzDoSucceed, fuzzOpRelease, 1,
			fuzzOpUpdate, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, fuzzOpReleaseAll, fuzzOpSleep, 3},
		// queue thresholds lowered below the waiting count, then a
		// rejection, then raised
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
			fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock,
			fuzzOpUpdate, 0, 0, 2, 0, 0, 2, 0, 0, 0, 0, 0, fuzzOpSubmit, 0, fuzzDoSucceed,
			fuzzOpUpdate, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, fuzzOpSubmit, 0, fuzzDoSucceed, fuzzOpReleaseAll},
		// idle TTL 1ms: groups forgotten while time passes, resolved again
		// from an updated policy
		{0, 0, 0, 0, 0, 0, 0, 0, 1, 0,
			fuzzOpSubmit, 0, fuzzDoSucceed, fuzzOpSubmit, 1, fuzzDoSleep, 4, fuzzOpSleep, 3, fuzzOpSleep, 6,
			fuzzOpUpdate, 0, 1, 0, 1, 0, 0, 0, 0, 0, 2, 1, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSleep, 12, fuzzOpRelease, 0, fuzzOpSleep, 15,
			fuzzOpUpdate, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, fuzzOpSleep, 15},
		// weights under fair share (ignored under IsolationOff), a
		// resolver, and refused updates
		{1, 0, 0, 0, 0, 0, 0, 0, 0, 6,
			fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 0, fuzzDoBlock, fuzzOpSubmit, 1, fuzzDoBlock, fuzzOpSubmit, 2, fuzzDoBlock,
			fuzzOpUpdate, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 3, fuzzOpUpdate, 7, fuzzOpRelease, 0,
			fuzzOpUpdate, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 9, fuzzOpClose, fuzzOpUpdate, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, fuzzOpReleaseAll},
	} {
		for _, mode := range []byte{0, 1} {
			f.Add(append([]byte{mode}, seed...))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 512 {
			data = data[:512] // keep each run small
		}
		synctest.Test(t, func(t *testing.T) { fuzzRunOps(t, data) })
	})
}

// fuzzPolicy decodes a policy of the given mode from ten bytes: small
// limits (Unlimited among them), thresholds (including 0; the global one is
// Unlimited under fair share), every rejection policy and three handler
// behaviours, an idle TTL, and under fair share a weight setting. Its
// listener is the oracle's recorder.
func fuzzPolicy(in *fuzzBytes, o *oracle, mode groupconc.IsolationMode) *groupconc.PolicyBuilder {
	u := groupconc.Unlimited
	b := builder().Isolation(mode).TaskLifecycleListener(o.rec).
		GlobalMaxInFlight(fuzzPick(in.next(), u, 1, 2, 3, 4))
	if gq := fuzzPick(in.next(), u, 0, 1, 2, 3); mode == groupconc.IsolationOff {
		b.GlobalQueueThreshold(gq)
	}
	b.DefaultMaxConcurrencyPerGroup(fuzzPick(in.next(), 1, 2, 3, u)).
		DefaultMaxInFlightPerGroup(fuzzPick(in.next(), u, 1, 2, 3, 4)).
		DefaultQueueThresholdPerGroup(fuzzPick(in.next(), u, 0, 1, 2, 3))
	switch in.next() % 7 {
	case 0:
		b.RejectionPolicy(groupconc.RejectAbort)
	case 1:
		b.RejectionPolicy(groupconc.RejectDiscard)
	case 2:
		b.RejectionPolicy(groupconc.RejectCallerRuns)
	case 3:
		o.handler = true
		b.RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) { return nil, groupconc.ErrRejected })
	case 4:
		o.handler = true
		b.RejectionHandler(func(ctx context.Context, rj *groupconc.Rejection) (any, error) { return rj.Run(ctx) })
	case 5:
		o.handler = true
		b.RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) { return -1, nil })
	case 6:
		b.RejectionPolicy(groupconc.RejectDiscardOldest)
	}
	if v := in.next(); v%2 == 1 {
		b.PerGroupMaxConcurrency(map[string]int{"c": 1 + int(v/2)%2})
	}
	if v := in.next(); v%2 == 1 {
		b.PerGroupQueueThreshold(map[string]int{"b": int(v/2) % 2})
	}
	b.IdleGroupTTL(fuzzPick(in.next(), time.Duration(0), time.Millisecond, 2*time.Millisecond, 5*time.Millisecond))
	v := in.next()
	if mode != groupconc.IsolationFairShare {
		return b
	}
	w := 1 + int(v/4)%3
	switch v % 4 {
	case 1:
		b.DefaultWeightPerGroup(w)
	case 2:
		b.PerGroupWeight(map[string]int{"a": w + 1})
	case 3:
		b.WeightResolver(func(k string) int {
			if k == "c" {
				panic("weight resolver fails for c")
			}
			return w - 1 // 0 for some: resolved as 1
		})
	}
	return b
}

func fuzzRunOps(t *testing.T, data []byte) {
	in := &fuzzBytes{b: data}
	o := newOracle()
	mode := fuzzPick(in.next(), groupconc.IsolationOff, groupconc.IsolationFairShare)
	p, err := fuzzPolicy(in, o, mode).Build()
	require.NoError(t, err)
	e := groupconc.New(p)
	keys := []string{"a", "b", "c"}
	gen := map[string]int{} // eviction generation per key: the gauge key suffix
	gaugeKeyOf := func(key string) string { return fmt.Sprintf("%s#%d", key, gen[key]) }
	o.live = newOracleLive(p)
	o.live.scopeOf = gaugeKeyOf
	var probes []func() error
	var tasks []*fuzzTask
	var ctxCancels []context.CancelFunc
	defer func() {
		for _, c := range ctxCancels {
			c()
		}
	}()
	var blocked []*fuzzBlocked // SubmitWith{Block} calls not seen to return yet
	submits := 0               // task IDs: blocked calls hold theirs until they return
	closing := false           // Shutdown or Close was called: UpdatePolicy refuses
	stopped := false           // Shutdown returned nil: everything is over
	pick := func() *fuzzTask {
		if len(tasks) == 0 {
			in.next()
			return nil
		}
		return tasks[int(in.next())%len(tasks)]
	}

	for step := 0; !in.done() && step < 96; step++ {
		op := int(in.next()) % fuzzOpCount
		switch op {
		case fuzzOpSubmit:
			key := keys[int(in.next())%len(keys)]
			do := int(in.next()) % fuzzDoCount
			if len(tasks) >= 48 {
				continue
			}
			ft := &fuzzTask{do: do, gate: make(chan struct{})}
			ctx := t.Context()
			switch do {
			case fuzzDoPreCancelled:
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				cancel()
			case fuzzDoBlockCtx, fuzzDoSleep:
				ctx, ft.cancelCtx = context.WithCancel(ctx)
				ctxCancels = append(ctxCancels, ft.cancelCtx)
			}
			sleep := time.Duration(in.next()%8) * time.Millisecond
			opts := fuzzSubmitOptions(in.next())
			fn := func(ctx context.Context) (int, error) {
				switch do {
				case fuzzDoFail:
					return 0, fuzzError{}
				case fuzzDoPanic:
					panic(fuzzError{})
				case fuzzDoGoexit:
					runtime.Goexit()
				case fuzzDoBlock:
					<-ft.gate
				case fuzzDoBlockCtx:
					select {
					case <-ft.gate:
					case <-ctx.Done():
						return 0, ctx.Err()
					}
				case fuzzDoSleep:
					select {
					case <-time.After(sleep):
					case <-ctx.Done():
						return 0, ctx.Err()
					}
				}
				return 1, nil
			}
			id := fmt.Sprintf("t%d", submits)
			submits++
			gaugeKey := gaugeKeyOf(key)
			if opts.Block {
				// It runs until it blocks or returns before the next op
				// (the step's synctest.Wait), so under gaugeKey's group.
				blocked = append(blocked, fuzzSubmitBlocking(o, gaugeKey, ctx, e, key, id, fn, opts, ft))
				break
			}
			var h *groupconc.TaskHandle[int]
			o.guard(t, "Submit", func() { h, err = oracleSubmitWith(o, gaugeKey, ctx, e, key, id, fn, opts) })
			if err != nil {
				require.ErrorIs(t, err, groupconc.ErrClosed, "Submit of a valid task fails only once closed")
				continue
			}
			ft.h = h
			tasks = append(tasks, ft)
		case fuzzOpRelease:
			if ft := pick(); ft != nil {
				select {
				case <-ft.gate:
				default:
					close(ft.gate)
				}
			}
		case fuzzOpReleaseAll:
			for _, ft := range tasks {
				select {
				case <-ft.gate:
				default:
					close(ft.gate)
				}
			}
		case fuzzOpCancel:
			if ft := pick(); ft != nil && ft.h.Cancel() {
				assert.False(t, ft.cancelled, "Cancel won twice")
				ft.cancelled = true
			}
		case fuzzOpCancelCtx:
			if ft := pick(); ft != nil && ft.cancelCtx != nil {
				ft.cancelCtx()
			}
		case fuzzOpAwait:
			ft := pick()
			d := time.Duration(in.next()%8) * time.Millisecond
			if ft == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(t.Context(), d)
			res, err := ft.h.Await(ctx)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) && res.Status == groupconc.StatusCancelled && res.Err == err {
				continue // ctx ended first (the handle may complete in the same instant)
			}
			real := ft.h.Wait()
			assert.Equal(t, real.Status, res.Status, "Await and Wait agree")
			if real.Status != groupconc.StatusRejected {
				assert.NoError(t, err, "Await's error is nil but for rejections")
			} else if err != nil {
				assert.ErrorIs(t, err, groupconc.ErrRejected)
			}
		case fuzzOpShutdownGroup:
			e.ShutdownGroup(keys[int(in.next())%len(keys)])
		case fuzzOpEvict:
			key := keys[int(in.next())%len(keys)]
			if probe, ok := e.GroupProbe(key); ok {
				probes = append(probes, probe)
				gen[key]++
			}
			e.EvictGroup(key)
		case fuzzOpShutdown:
			d := time.Duration(in.next()%8) * time.Millisecond
			ctx, cancel := context.WithTimeout(t.Context(), d)
			start := time.Now()
			closing = true
			o.guard(t, "Shutdown", func() { err = e.Shutdown(ctx) })
			cancel()
			if err == nil {
				stopped = true
				o.seal()
				for _, ft := range tasks {
					assert.True(t, ft.h.IsDone(), "I3: a task outlived a Shutdown that returned nil")
				}
			} else {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Equal(t, d, time.Since(start), "I7: Shutdown returns at its deadline")
			}
		case fuzzOpClose:
			closing = true
			o.guard(t, "Close", func() { assert.NoError(t, e.Close()) })
		case fuzzOpSleep:
			// Fake time passes: deadlines and timed tasks come due, and
			// idle groups are forgotten.
			d := time.Duration(in.next()%16) * time.Millisecond
			idle := fuzzIdleGroups(e, o, keys, gaugeKeyOf)
			time.Sleep(d) // fake clock: inside the bubble
			synctest.Wait()
			if ttl := p.IdleGroupTTL(); ttl > 0 && d >= 2*ttl {
				e.Stats()
				for _, k := range idle {
					_, found := e.GroupStats(k)
					assert.False(t, found, "group %q idle for %v under IdleGroupTTL %v is still known", k, d, ttl)
				}
			}
		case fuzzOpUpdate:
			v := in.next()
			if v%8 == 7 {
				// Refused: no policy, or another mode.
				other := fuzzPick(byte(mode)+1, groupconc.IsolationOff, groupconc.IsolationFairShare)
				assert.ErrorIs(t, e.UpdatePolicy(nil), groupconc.ErrInvalidPolicy, "UpdatePolicy(nil)")
				op, err := groupconc.NewPolicyBuilder().Isolation(other).TaskLifecycleListener(o.rec).Build()
				require.NoError(t, err)
				err = e.UpdatePolicy(op)
				if closing {
					assert.Error(t, err, "UpdatePolicy to %v after Shutdown or Close", other)
				} else {
					assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy, "UpdatePolicy to %v from %v", other, mode)
				}
				continue
			}
			np, err := fuzzPolicy(in, o, mode).Build()
			require.NoError(t, err)
			o.live.update(np)
			o.guard(t, "UpdatePolicy", func() { err = e.UpdatePolicy(np) })
			if err != nil {
				o.live.update(p)
				assert.True(t, closing, "UpdatePolicy failed before Shutdown or Close: %v", err)
				assert.ErrorIs(t, err, groupconc.ErrClosed)
				continue
			}
			p = np
		}
		synctest.Wait()
		blocked, tasks = fuzzHarvest(t, blocked, tasks)
		if !o.checkLimits(t, oracleLimitsOf(p)) || !o.checkStill(t, e, p, keys) || !o.observe(t) || !o.checkEventsSoFar(t) {
			t.Logf("after step %d (op %d)", step, op)
			break
		}
	}

	// The end: close, let every task go, join, and check everything.
	o.guard(t, "Close", func() { assert.NoError(t, e.Close()) })
	synctest.Wait() // the calls that gave up return
	blocked, tasks = fuzzHarvest(t, blocked, tasks)
	assert.Empty(t, blocked, "a blocked caller still waits after Close returned")
	for _, ft := range tasks {
		select {
		case <-ft.gate:
		default:
			close(ft.gate)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	o.guard(t, "Shutdown", func() { err = e.Shutdown(ctx) })
	require.NoError(t, err, "I7: every task ends once its gate opens and its context is cancelled")
	if !stopped {
		o.seal()
	}
	o.awaitAll(t, ctx)
	o.checkAll(t, e, oracleLimitsOf(p))
	for i, probe := range probes {
		assert.NoError(t, probe(), "I2: evicted group state %d", i)
	}
	fuzzCheckOutcomes(t, o, tasks)
	if testing.Verbose() {
		t.Logf("%v: %d tasks, %d evictions; %+v", mode, len(tasks), len(probes), e.Stats())
	}
}

// fuzzIdleGroups returns the keys of the groups that are known and idle in a
// still executor: nothing of theirs waits or runs, with permits or without
// (a function run after a rejection belongs to no group's count, so any
// such function running anywhere makes none idle), and no caller blocks to
// submit to them (a blocked caller keeps its group).
func fuzzIdleGroups(e *groupconc.GroupExecutor, o *oracle, keys []string, gaugeKeyOf func(string) string) []string {
	if o.gauges.outside.cur.Load() != 0 {
		return nil
	}
	var idle []string
	for _, k := range keys {
		gs, found := e.GroupStats(k)
		if found && gs.Running == 0 && gs.Waiting == 0 && gs.InFlight == 0 && gs.Blocked == 0 && o.gauges.group(gaugeKeyOf(k)).cur.Load() == 0 {
			idle = append(idle, k)
		}
	}
	return idle
}

// fuzzCheckOutcomes checks each task's result against what its function did:
// a function that ran to its end decides the result unless Cancel won first.
func fuzzCheckOutcomes(t *testing.T, o *oracle, tasks []*fuzzTask) {
	t.Helper()
	for _, ft := range tasks {
		res := ft.h.Wait()
		l, _ := o.rec.lookup(ft.h.GroupKey(), ft.h.TaskID())
		ran := slices.Contains(l.seq(), oracleStarted)
		switch {
		case ft.cancelled:
			assert.Equal(t, groupconc.StatusCancelled, res.Status, "Cancel won")
			assert.Equal(t, context.Canceled, res.Err)
		case ft.do == fuzzDoPreCancelled:
			assert.Equal(t, groupconc.StatusCancelled, res.Status)
			assert.False(t, ran, "a task with a done context never runs")
		case !ran:
			assert.Contains(t, []groupconc.TaskStatus{groupconc.StatusCancelled, groupconc.StatusRejected, groupconc.StatusSuccess, groupconc.StatusFailed}, res.Status)
			if !o.handler {
				assert.Contains(t, []groupconc.TaskStatus{groupconc.StatusCancelled, groupconc.StatusRejected}, res.Status, "a task that never ran")
			}
		case ft.do == fuzzDoSucceed:
			assert.Equal(t, groupconc.StatusSuccess, res.Status)
			assert.Equal(t, 1, res.Value)
		case ft.do == fuzzDoFail:
			assert.Equal(t, groupconc.StatusFailed, res.Status)
			assert.ErrorIs(t, res.Err, fuzzError{}, "the task's own error, unwrapped")
		case ft.do == fuzzDoPanic, ft.do == fuzzDoGoexit:
			assert.Equal(t, groupconc.StatusFailed, res.Status)
			var pe *groupconc.PanicError
			assert.ErrorAs(t, res.Err, &pe)
		case ft.do == fuzzDoBlock:
			assert.Equal(t, groupconc.StatusSuccess, res.Status, "it ignores its context")
		default: // blockCtx, sleep: finished or cancelled
			assert.Contains(t, []groupconc.TaskStatus{groupconc.StatusSuccess, groupconc.StatusCancelled}, res.Status)
		}
	}
}

// FuzzPolicyBuilder: every combination of settings builds a policy obeying
// the resolution rules (concurrency >= 1, in-flight >= 1, queue >= 0,
// weight >= 1; map, then resolver, then default) or returns an error
// wrapping ErrInvalidPolicy that names each bad field, and never panics.
// set is a bit mask of which settings are applied.
func FuzzPolicyBuilder(f *testing.F) {
	const m = math.MaxInt
	f.Add(uint32(0), 0, 0, 0, 0, 0, "a", 0, 0, 0, 0, 0, int64(0), 0, int64(0), int64(0))
	f.Add(uint32(0xffff), 2, 3, 4, 1, 5, "a", 3, -7, 1, 1, 2, int64(time.Second), 1, int64(0), int64(-1))
	f.Add(uint32(0x1ff), 0, -1, 1, -1, 0, "", 1, 0, 2, 0, 0, int64(0), 0, int64(0), int64(0))
	f.Add(uint32(0x0ff), m, m, m, m, m, "k", m, math.MinInt, 0, 0, m, int64(math.MaxInt64), m, int64(math.MaxInt64), int64(math.MaxInt64))
	f.Add(uint32(0x3ff), 1, 1, 1, 0, 0, "x", 0, 0, 9, 0, 0, int64(0), 0, int64(0), int64(0))
	f.Add(uint32(0x1e1), 3, 1, 2, 0, 1, "k", 2, 4, 2, 0, 0, int64(0), 0, int64(0), int64(0))
	// fair share with weights, an idle TTL and pressure warnings
	f.Add(uint32(0xfc06), 1, 4, 2, 0, 3, "a", 2, 3, 0, 1, 2, int64(time.Minute), 10, int64(time.Second), int64(0))
	// weights without fair share; a global queue threshold under it
	f.Add(uint32(0x2800), 1, 1, 1, 0, 0, "a", 1, 1, 0, 0, 1, int64(0), 0, int64(0), int64(0))
	f.Add(uint32(0x0408), 1, 1, 1, 5, 0, "a", 1, 1, 0, 1, 1, int64(0), 0, int64(0), int64(0))
	// an unknown mode, a negative TTL, negative pressure fields
	f.Add(uint32(0xc400), 1, 1, 1, 0, 0, "a", 1, 1, 0, 7, 1, int64(-1), -1, int64(-time.Second), int64(-1))
	f.Fuzz(func(t *testing.T, set uint32, conc, global, inflight, gqueue, queue int, mapKey string, mapVal, resolved, rejection int,
		mode, weight int, ttl int64, backlogCount int, backlogAge, cooldown int64,
	) {
		has := func(bit int) bool { return set&(1<<bit) != 0 }
		b := groupconc.NewPolicyBuilder()
		var bad []string // the fields a refusal must name
		need := func(ok bool, fields ...string) {
			if !ok {
				bad = append(bad, fields...)
			}
		}
		concMap := map[string]int{mapKey: mapVal}
		inflightMap := map[string]int{mapKey: mapVal}
		queueMap := map[string]int{mapKey: mapVal}
		weightMap := map[string]int{mapKey: weight}
		resolverPanics := resolved%5 == 0
		resolver := func(string) int {
			if resolverPanics {
				panic("resolver boom")
			}
			return resolved
		}
		if has(0) {
			b.DefaultMaxConcurrencyPerGroup(conc)
			need(conc >= 1, "DefaultMaxConcurrencyPerGroup")
		}
		if has(1) {
			b.GlobalMaxInFlight(global)
			need(global >= 1, "GlobalMaxInFlight")
		}
		if has(2) {
			b.DefaultMaxInFlightPerGroup(inflight)
			need(inflight >= 1, "DefaultMaxInFlightPerGroup")
		}
		if has(3) {
			b.GlobalQueueThreshold(gqueue)
			need(gqueue >= 0, "GlobalQueueThreshold")
		}
		if has(4) {
			b.DefaultQueueThresholdPerGroup(queue)
			need(queue >= 0, "DefaultQueueThresholdPerGroup")
		}
		if has(5) {
			b.PerGroupMaxConcurrency(concMap)
			need(mapVal >= 1 && mapKey != "", "PerGroupMaxConcurrency")
		}
		if has(6) {
			b.PerGroupMaxInFlight(inflightMap)
			need(mapVal >= 1 && mapKey != "", "PerGroupMaxInFlight")
		}
		if has(7) {
			b.PerGroupQueueThreshold(queueMap)
			need(mapVal >= 0 && mapKey != "", "PerGroupQueueThreshold")
		}
		if has(8) {
			b.ConcurrencyResolver(resolver)
		}
		if has(9) {
			b.RejectionPolicy(groupconc.RejectionPolicy(rejection))
			need(rejection >= int(groupconc.RejectAbort) && rejection <= int(groupconc.RejectCallerRuns), "RejectionPolicy")
		}
		isolation := groupconc.IsolationOff
		if has(10) {
			isolation = groupconc.IsolationMode(mode)
			b.Isolation(isolation)
			need(isolation == groupconc.IsolationOff || isolation == groupconc.IsolationFairShare, "Isolation")
		}
		if has(11) {
			b.PerGroupWeight(weightMap)
			need(weight >= 1 && mapKey != "", "PerGroupWeight")
		}
		if has(12) {
			b.WeightResolver(resolver)
		}
		if has(13) {
			b.DefaultWeightPerGroup(weight)
			need(weight >= 1, "DefaultWeightPerGroup")
		}
		weighted := has(11) || has(12) || has(13)
		if weighted && isolation == groupconc.IsolationOff {
			need(false, "Isolation", "Weight")
		}
		if isolation == groupconc.IsolationFairShare && has(3) && gqueue != groupconc.Unlimited {
			need(false, "GlobalQueueThreshold", "Isolation")
		}
		if has(14) {
			b.IdleGroupTTL(time.Duration(ttl))
			need(ttl >= 0, "IdleGroupTTL")
		}
		pressure := groupconc.PressureConfig{BacklogCount: backlogCount, BacklogAge: time.Duration(backlogAge), Cooldown: time.Duration(cooldown)}
		if has(15) {
			var fn func(groupconc.PressureWarning)
			if has(16) {
				fn = func(groupconc.PressureWarning) {}
			}
			b.PressureWarnings(pressure, fn)
			need(backlogCount >= 0, "BacklogCount")
			need(backlogAge >= 0, "BacklogAge")
			need(cooldown >= 0, "Cooldown")
		}
		var p *groupconc.GroupPolicy
		var err error
		require.NotPanics(t, func() { p, err = b.Build() })
		// The builder copied the maps: changing them now changes nothing.
		concMap[mapKey], inflightMap[mapKey], queueMap[mapKey], weightMap[mapKey] = -100, -100, -100, -100
		if len(bad) > 0 {
			require.Error(t, err, "an invalid setting must be refused: %v", bad)
			require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
			require.Nil(t, p)
			for _, field := range bad {
				assert.Contains(t, err.Error(), field, "the error names each bad field")
			}
			return
		}
		require.NoError(t, err)
		require.NotNil(t, p)
		defConc := 1
		if has(0) {
			defConc = conc
		}
		defWeight := 1
		if has(13) {
			defWeight = weight
		}
		for _, k := range []string{mapKey, mapKey + "-other", "z"} {
			var got int
			require.NotPanics(t, func() { got = p.ResolveConcurrency(k) })
			require.GreaterOrEqual(t, got, 1)
			switch {
			case has(5) && k == mapKey:
				require.Equal(t, mapVal, got, "map first")
			case has(8) && !resolverPanics:
				require.Equal(t, max(resolved, 1), got, "then the resolver, at least 1")
			default:
				require.Equal(t, defConc, got, "then the default")
			}
			inf := p.ResolveMaxInFlight(k)
			require.GreaterOrEqual(t, inf, 1)
			switch {
			case has(6) && k == mapKey:
				require.Equal(t, mapVal, inf)
			case has(2):
				require.Equal(t, inflight, inf)
			default:
				require.Equal(t, groupconc.Unlimited, inf)
			}
			q := p.ResolveQueueThreshold(k)
			require.GreaterOrEqual(t, q, 0)
			switch {
			case has(7) && k == mapKey:
				require.Equal(t, mapVal, q)
			case has(4):
				require.Equal(t, queue, q)
			default:
				require.Equal(t, groupconc.Unlimited, q)
			}
			require.NotPanics(t, func() { got = p.ResolveWeight(k) })
			require.GreaterOrEqual(t, got, 1)
			switch {
			case has(11) && k == mapKey:
				require.Equal(t, weight, got, "weight: map first")
			case has(12) && !resolverPanics:
				require.Equal(t, max(resolved, 1), got, "weight: then the resolver, at least 1")
			default:
				require.Equal(t, defWeight, got, "weight: then the default")
			}
		}
		require.GreaterOrEqual(t, p.GlobalMaxInFlight(), 1)
		require.GreaterOrEqual(t, p.GlobalQueueThreshold(), 0)
		if has(1) {
			require.Equal(t, global, p.GlobalMaxInFlight())
		}
		if has(3) {
			require.Equal(t, gqueue, p.GlobalQueueThreshold())
		}
		require.Equal(t, isolation, p.Isolation())
		if isolation == groupconc.IsolationFairShare {
			require.Equal(t, groupconc.Unlimited, p.GlobalQueueThreshold(), "fair share leaves the global queue unbounded")
		}
		wantTTL := time.Duration(0)
		if has(14) {
			wantTTL = time.Duration(ttl)
		}
		require.Equal(t, wantTTL, p.IdleGroupTTL())
	})
}
