package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

func fuzzRunOps(t *testing.T, data []byte) {
	in := &fuzzBytes{b: data}
	o := newOracle()
	o.watchDos()
	sh := fuzzShapeOf(in.next())
	mode := sh.mode
	src := fuzzSource(in, func() { fuzzPolicy(in, o, sh) })
	p, err := fuzzPolicy(&fuzzBytes{b: src}, o, sh).Build()
	require.NoError(t, err)
	e := groupconc.New(p)
	keys := sh.keys
	gen := map[string]int{} // eviction generation per key: the gauge key suffix
	var genMu sync.Mutex    // guards gen: a task calling ExecuteAll reads it
	gaugeKeyOf := func(key string) string {
		genMu.Lock()
		defer genMu.Unlock()
		return fmt.Sprintf("%s#%d", key, gen[key])
	}
	o.live = newOracleLive(p)
	o.live.setCallerRuns(p, sh.callerRuns)
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
	var dos []*fuzzDoCall      // every Do call made
	var bs fuzzBatches         // every ExecuteAll call made
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
		op := sh.op(in.next())
		switch op {
		case fuzzOpSubmit:
			key := keys[int(in.next())%len(keys)]
			v := in.next()
			do := int(v) % fuzzDoCount
			if len(tasks)+len(dos) >= 48 {
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
			if sh.costs {
				opts.Cost = int(in.next() % 6)
			}
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
			gaugeKey := gaugeKeyOf(key)
			if fuzzAsDo(v) {
				// As a blocked submit runs, under gaugeKey's group.
				dos = append(dos, fuzzStartDo(o, gaugeKey, ctx, e, key, fn, opts, ft))
				break
			}
			id := fmt.Sprintf("t%d", submits)
			submits++
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
			if ft := fuzzPickGated(in, tasks, dos, bs.gated()...); ft != nil {
				ft.open()
			}
		case fuzzOpReleaseAll:
			for _, ft := range tasks {
				ft.open()
			}
			for _, d := range dos {
				d.ft.open()
			}
			bs.openAll()
		case fuzzOpCancel:
			if ft := pick(); ft != nil && ft.h.Cancel() {
				assert.False(t, ft.cancelled, "Cancel won twice")
				ft.cancelled = true
			}
		case fuzzOpCancelCtx:
			if ft := fuzzPickGated(in, tasks, dos, bs.gated()...); ft != nil && ft.cancelCtx != nil {
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
				// ctx ended first (the handle may complete in the same
				// instant). Fake time passed, so a MaxWait may have fired:
				// settle below, as after every op, or the next op races
				// the caller it woke (and the oracle's epochs with it).
				break
			}
			real := ft.h.Wait()
			assert.Equal(t, real.Status, res.Status, "Await and Wait agree")
			if real.Status != groupconc.StatusRejected {
				assert.NoError(t, err, "Await's error is nil but for rejections")
			} else if err != nil {
				assert.ErrorIs(t, err, groupconc.ErrRejected)
			}
		case fuzzOpShutdownGroup:
			key := keys[int(in.next())%len(keys)]
			e.ShutdownGroup(key)
		case fuzzOpEvict:
			key := keys[int(in.next())%len(keys)]
			if probe, ok := e.GroupProbe(key); ok {
				probes = append(probes, probe)
				genMu.Lock()
				for _, k := range fuzzSubtree(p, keys, key) {
					gen[k]++ // a parent's subtree goes with it
				}
				genMu.Unlock()
			}
			e.EvictGroup(key)
		case fuzzOpShutdown:
			d := time.Duration(in.next()%8) * time.Millisecond
			ctx, cancel := context.WithTimeout(t.Context(), d)
			start := time.Now()
			closing = true
			o.guard(t, "Shutdown", func() { err = e.Shutdown(ctx) })
			cancel()
			assert.Zero(t, e.Stats().Blocked, "a caller still blocked once Shutdown returned")
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
			assert.Zero(t, e.Stats().Blocked, "a caller still blocked once Close returned")
		case fuzzOpSleep:
			// Fake time passes: deadlines and timed tasks come due, and
			// idle groups are forgotten.
			d := time.Duration(in.next()%16) * time.Millisecond
			idle := bs.idleGroups(e, o, p, keys)
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
			var nb *groupconc.PolicyBuilder
			if v%8 == 6 { // one live setting of the policy in force changed
				nb = fuzzTweak(src, in.next(), o, sh)
			} else {
				src = fuzzSource(in, func() { nb = fuzzPolicy(in, o, sh) })
			}
			np, err := nb.Build()
			require.NoError(t, err)
			o.live.setCallerRuns(np, sh.callerRuns)
			o.live.update(np)
			o.guard(t, "UpdatePolicy", func() { err = e.UpdatePolicy(np) })
			if err != nil {
				o.live.update(p)
				assert.True(t, closing, "UpdatePolicy failed before Shutdown or Close: %v", err)
				assert.ErrorIs(t, err, groupconc.ErrClosed)
				continue
			}
			p = np
		case fuzzOpOverride:
			key := keys[int(in.next())%len(keys)]
			fuzzOverride(t, e, o, key, gaugeKeyOf(key), in.next(), closing)
		case fuzzOpExecuteAll:
			tasks = bs.start(t, in, o, e, sh, tasks, gaugeKeyOf, false)
		case fuzzOpExecuteAllWith:
			tasks = bs.start(t, in, o, e, sh, tasks, gaugeKeyOf, true)
		}
		synctest.Wait()
		if fuzzTrace {
			fuzzTraceStep(t, e, keys, fmt.Sprintf("step %d op %d (at byte %d): %d tasks, %d blocked, %d Do", step, op, in.i, len(tasks), len(blocked), len(dos)))
		}
		blocked, tasks = fuzzHarvest(t, blocked, tasks)
		fuzzHarvestDos(t, o, dos, stopped)
		bs.harvest(t, o, stopped)
		if !o.checkLimits(t, oracleLimitsOf(p)) || !o.checkStill(t, e, p, keys) ||
			!checkNoIdlePermits(t, e, fuzzMaxCost(sh)) || !checkSubtreeSums(t, e) || !checkNoCallerBlockedOnRoom(t, e, fuzzMaxCost(sh)) ||
			!o.observe(t) || !o.checkEventsSoFar(t) {
			t.Logf("after step %d (op %d)", step, op)
			break
		}
	}

	// The end: close, let every task go, join, and check everything.
	o.guard(t, "Close", func() { assert.NoError(t, e.Close()) })
	synctest.Wait() // the calls that gave up return
	blocked, tasks = fuzzHarvest(t, blocked, tasks)
	assert.Empty(t, blocked, "a blocked caller still waits after Close returned")
	fuzzHarvestDos(t, o, dos, false)
	fuzzDosAfterClose(t, dos)
	bs.afterClose(t)
	bs.openAll()
	for _, ft := range tasks {
		ft.open()
	}
	for _, d := range dos {
		d.ft.open()
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	o.guard(t, "Shutdown", func() { err = e.Shutdown(ctx) })
	require.NoError(t, err, "I7: every task ends once its gate opens and its context is cancelled")
	synctest.Wait() // the Do calls return
	fuzzHarvestDos(t, o, dos, true)
	bs.harvest(t, o, true)
	if !stopped {
		o.seal()
	}
	o.awaitAll(t, ctx)
	o.checkAll(t, e, oracleLimitsOf(p))
	for i, probe := range probes {
		assert.NoError(t, probe(), "I2: evicted group state %d", i)
	}
	fuzzCheckOutcomes(t, o, tasks)
	bs.checkHeard(t, o)
	groups := 0
	for range e.AllGroupStats() {
		groups++
	}
	assert.Equal(t, groups, e.Stats().Groups, "Stats().Groups against the groups AllGroupStats yields")
	if testing.Verbose() {
		t.Logf("%v (parents %v, resolved %v, costs %v): %d tasks, %d evictions; %+v", mode, sh.tree, sh.resolved, sh.costs, len(tasks), len(probes), e.Stats())
	}
}
