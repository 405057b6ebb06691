package groupconc_test

// FuzzOps' ExecuteAllWith calls. An op byte from fuzzOpByteExecuteAllWith
// up to fuzzOpByteExecuteAll calls groupconc.ExecuteAllWith. No input kept
// in testdata has such an op byte, so they decode as before. Its bytes are
// those of an ExecuteAll op (fuzz_executeall_test.go), then the options
// (fuzzSubmitOptions: a priority, Block and a MaxWait), then a byte for
// its context and misuse, then with costs a cost. The context may end at
// a deadline of fake time, so during a Block wait. Some calls hold an
// invalid task or invalid options. The checks follow ExecuteAllWith's
// contract. Every task is validated first. The tasks are submitted in
// order. Once one is refused for good, by ctx ending during a wait or by
// the executor closing, the rest are CANCELLED with that error, and the
// call returns it. A task whose group stopped while it waited is skipped.

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// fuzzWith is what an ExecuteAllWith call adds to an ExecuteAll call.
type fuzzWith struct {
	opts    groupconc.SubmitOptions
	timeout time.Duration // ctx's deadline from the call, if not zero
	misuse  int           // fuzzWithValid, or what is invalid
}

// What an ExecuteAllWith call gets wrong.
const (
	fuzzWithValid = iota
	fuzzWithNilTask
	fuzzWithBadOpts
)

// fuzzDecodeWith decodes the bytes an ExecuteAllWith op adds. The context
// byte gives a deadline of up to 7ms, and one time in eight a misuse.
func fuzzDecodeWith(in *fuzzBytes, sh *fuzzShape) *fuzzWith {
	w := &fuzzWith{opts: fuzzSubmitOptions(in.next())}
	c := in.next()
	w.timeout = time.Duration(c%8) * time.Millisecond
	switch c >> 3 % 16 {
	case 15:
		w.misuse = fuzzWithNilTask
	case 14:
		w.misuse = fuzzWithBadOpts
		w.opts.MaxWait = -time.Millisecond
	}
	if sh.costs {
		w.opts.Cost = int(in.next() % 6)
	}
	return w
}

// context gives ctx its deadline, if w has one, and adds its cancel to
// cancel. A nil w leaves them alone.
func (w *fuzzWith) context(ctx context.Context, cancel context.CancelFunc) (context.Context, context.CancelFunc) {
	if w == nil || w.timeout == 0 {
		return ctx, cancel
	}
	ctx, stop := context.WithTimeout(ctx, w.timeout)
	return ctx, func() { stop(); cancel() }
}

// endsAlone reports whether b's ctx ends only while b's call waits, so
// the call must return ctx's error then. A deadline may come as the call
// returns, so one then does not count. Nor does a task's context, which
// Shutdown may cancel as the call returns.
func (b *fuzzBatch) endsAlone() bool {
	switch {
	case b.how == fuzzBatchInside:
		return false
	case !b.dl.IsZero():
		return b.endedAt.Before(b.dl)
	case b.how == fuzzBatchDone, b.how == fuzzBatchCancellable:
		return true
	}
	return false
}

// fuzzClosed reports whether c is closed.
func fuzzClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// fuzzMoment is a step of the harness and an instant of fake time.
type fuzzMoment struct{ step, at atomic.Int64 }

// mark records the moment, in the step step counts.
func (m *fuzzMoment) mark(step *atomic.Int64) {
	m.at.Store(time.Now().UnixNano())
	m.step.Store(1 + step.Load())
}

// endedWithCtx reports whether bt's function ended in the step and at the
// instant b's ctx ended. A timer (ctx's deadline, a Shutdown's) then ends
// ctx as the function ends, so ctx may end before it is done returning.
func (b *fuzzBatch) endedWithCtx(bt *fuzzBatchTask) bool {
	s := bt.ended.step.Load()
	return s != 0 && s == b.ctxEnd.step.Load() && bt.ended.at.Load() == b.ctxEnd.at.Load()
}

// pastDeadline reports whether r is a task's own context expiring at the
// deadline of b's ctx.
func (b *fuzzBatch) pastDeadline(r groupconc.GroupResult[int]) bool {
	return !b.dl.IsZero() && errors.Is(r.Err, context.DeadlineExceeded) && !r.End.Before(b.dl)
}

// invalid reports whether w's call is refused before any task is.
func (w *fuzzWith) invalid() bool { return w != nil && w.misuse != fuzzWithValid }

// waits reports whether b's call may wait for a queue slot before a task.
// A call inside a task never does.
func (b *fuzzBatch) waits() bool {
	return b.with != nil && b.with.opts.Block && b.how != fuzzBatchInside
}

// blocking reports whether a call that may wait has not returned yet: it
// may still submit to any group.
func (bs *fuzzBatches) blocking() bool {
	for _, b := range bs.all() {
		if b.waits() && !fuzzClosed(b.done) {
			return true
		}
	}
	return false
}

// groupTasks returns the tasks of b's call, wrapped for the oracle. Those
// of an ExecuteAllWith call read their gauge keys as their functions
// start, as a Block wait may outlast an eviction of their group.
func (b *fuzzBatch) groupTasks(o *oracle, gaugeKeyOf func(string) string, step *atomic.Int64) []groupconc.GroupTask[int] {
	gts := make([]groupconc.GroupTask[int], len(b.tasks))
	for i, bt := range b.tasks {
		fn := bt.fn(b.ctxDone, step)
		if b.with == nil {
			fn = oracleTaskCost(o, gaugeKeyOf(bt.key), bt.key, bt.id, 1, fn)
		} else {
			fn = fuzzTaskLate(o, gaugeKeyOf, bt.key, bt.id, b.with.opts.Cost, fn)
		}
		gts[i] = groupconc.GroupTask[int]{GroupKey: bt.key, TaskID: bt.id, Task: fn}
	}
	if b.with != nil && b.with.misuse == fuzzWithNilTask {
		gts[len(gts)-1].Task = nil
	}
	return gts
}

// fuzzTaskLate is oracleTaskCost with the gauge keys read as fn starts. A
// task starts only in the group it was submitted to, so they are the keys
// of that group. The limits it is held to are those since the call.
func fuzzTaskLate(o *oracle, gaugeKeyOf func(string) string, key, id string, cost int, fn groupconc.Task[int]) groupconc.Task[int] {
	o.rec.with(key, id, func(l *oracleTaskLog) { l.wrapped = true })
	since := o.live.epoch()
	return func(ctx context.Context) (int, error) {
		return oracleWrapSince(o, gaugeKeyOf(key), key, cost, since, func() string { return id }, fn)(ctx)
	}
}

// execute makes b's call.
func (b *fuzzBatch) execute(ctx context.Context, e *groupconc.GroupExecutor, gts []groupconc.GroupTask[int]) ([]groupconc.GroupResult[int], error) {
	if b.with == nil {
		return groupconc.ExecuteAll(ctx, e, gts)
	}
	return groupconc.ExecuteAllWith(ctx, e, gts, b.with.opts)
}

// see notes the tasks of b heard submitted by the harvest numbered n.
func (b *fuzzBatch) see(o *oracle, n int) {
	for _, bt := range b.tasks {
		if bt.seenAt == 0 {
			if l, _ := o.rec.lookup(bt.key, bt.id); slices.Contains(l.seq(), oracleSubmitted) {
				bt.seenAt = n
			}
		}
	}
}

// checkRefused checks err, that of a task of b never accepted, and returns
// why b's call stopped submitting: stop, or err if it stops it. A stop is
// the executor closing, or ctx ending while the call waited for a slot.
// Every task after a stop is refused with the same error. A task whose
// group was shut down or evicted while the call waited is skipped.
func (b *fuzzBatch) checkRefused(t *testing.T, tn string, err, stop error) error {
	t.Helper()
	switch {
	case stop != nil:
		assert.Equal(t, stop, err, "%s: a task after the call stopped", tn)
		return stop
	case b.waits() && (errors.Is(err, groupconc.ErrGroupShutdown) || errors.Is(err, groupconc.ErrGroupEvicted)):
		return nil
	case errors.Is(err, groupconc.ErrClosed):
	case b.waits() && b.ctxErr != nil && err == b.ctxErr:
	default:
		t.Errorf("%s: never accepted, with %v (Block %v, how %d, ctx %v)", tn, err, b.waits(), b.how, b.ctxErr)
	}
	return err
}

// checkInvalid checks a call refused for misuse: no results, an error
// wrapping ErrInvalidTask, and no task accepted or run.
func (b *fuzzBatch) checkInvalid(t *testing.T, o *oracle, name string) {
	t.Helper()
	assert.Nil(t, b.results, "%s: results of a refused call", name)
	assert.ErrorIs(t, b.err, groupconc.ErrInvalidTask, "%s: misuse %d", name, b.with.misuse)
	for _, bt := range b.tasks {
		l, _ := o.rec.lookup(bt.key, bt.id)
		assert.Empty(t, l.seq(), "%s: %s heard though the call was refused", name, bt.id)
		assert.Zero(t, bt.calls.Load(), "%s: %s ran though the call was refused", name, bt.id)
	}
}

// checkWith checks what ExecuteAllWith adds. The accepted tasks were heard
// submitted in order, with Submitted times in order. A task ends REJECTED
// for its wait only if the call waits, with a MaxWait.
func (b *fuzzBatch) checkWith(t *testing.T, o *oracle, name string) {
	t.Helper()
	if b.with == nil {
		return
	}
	var last *fuzzBatchTask
	var lastAt time.Time
	for i, bt := range b.tasks {
		r := b.results[i]
		if l, _ := o.rec.lookup(bt.key, bt.id); !slices.Contains(l.seq(), oracleSubmitted) {
			continue
		}
		if last != nil {
			assert.LessOrEqual(t, last.seenAt, bt.seenAt, "%s: %s heard submitted before %s", name, bt.id, last.id)
			assert.False(t, r.Submitted.Before(lastAt), "%s: %s submitted at %v, before %s at %v", name, bt.id, r.Submitted, last.id, lastAt)
		}
		last, lastAt = bt, r.Submitted
		var rj *groupconc.RejectedError
		if errors.As(r.Err, &rj) && rj.Reason == groupconc.ReasonWaitTimeout {
			assert.True(t, b.waits() && b.with.opts.MaxWait > 0, "%s: %s rejected for its wait", name, bt.id)
		}
	}
}

// fuzzExecuteAllWithSeeds are FuzzOps seeds with ExecuteAllWith calls, each
// in both modes. Each group runs one task at a time and queues none, and a
// task holds group a, so Block calls wait. The calls' context is cancelled,
// or ends at a deadline, or the group is shut down and then evicted, or
// Shutdown or Close begin, while they wait. A MaxWait passes. A call made
// inside a task never waits. Some calls are invalid. With parents and
// costs, a call waits on a paused group until it is resumed.
func fuzzExecuteAllWithSeeds() [][]byte {
	const (
		xw    = fuzzOpByteExecuteAllWith
		block = 0x40
	)
	batch := func(how, outer, opts, ctx byte, pairs ...byte) []byte {
		b := append([]byte{xw, byte(len(pairs)/2-1) | how<<2, outer}, pairs...)
		return append(b, opts, ctx)
	}
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	ops := func(b ...byte) []byte { return b }
	flat := ops(0, 1, 0, 0, 1, 0, 0, 0, 0, 0) // concurrency 1 and queues 0
	hold := ops(fuzzOpSubmit, 0, fuzzDoBlock, 0, 0)
	var seeds [][]byte
	for _, seed := range []struct {
		shape byte
		ops   []byte
	}{
		{0, cat(flat, hold, batch(fuzzBatchCancellable, 0, block, 0, 0, fuzzDoSucceed, 1, fuzzDoSucceed, 0, fuzzDoBlock),
			ops(fuzzOpCancelCtx, 1, fuzzOpReleaseAll))},
		{0, cat(flat, hold, batch(fuzzBatchPlain, 0, block|2<<3, 0, 0, fuzzDoSucceed, 1, fuzzDoBlock, 0, fuzzDoSucceed),
			ops(fuzzOpSleep, 3, fuzzOpRelease, 2, fuzzOpSleep, 3, fuzzOpReleaseAll))},
		{0, cat(flat, hold, batch(fuzzBatchPlain, 0, block|3, 0, 0, fuzzDoSucceed, 0, fuzzDoFail, 1, fuzzDoBlock),
			ops(fuzzOpShutdownGroup, 0, fuzzOpEvict, 0, fuzzOpRelease, 3, fuzzOpReleaseAll))},
		{0, cat(flat, hold, batch(fuzzBatchPlain, 0, block|1, 3, 1, fuzzDoSucceed, 0, fuzzDoSucceed, 2, fuzzDoSucceed),
			ops(fuzzOpSleep, 1, fuzzOpSleep, 4, fuzzOpReleaseAll))},
		{0, cat(flat, hold, batch(fuzzBatchDone, 0, block, 0, 0, fuzzDoSucceed, 1, fuzzDoSucceed), ops(fuzzOpReleaseAll))},
		{0, cat(flat, hold, batch(fuzzBatchInside, 1, block, 0, 0, fuzzDoSucceed, 0, fuzzDoBlock, 2, fuzzDoSucceed),
			ops(fuzzOpReleaseAll))},
		{0, cat(flat, hold, batch(fuzzBatchPlain, 0, block|5, 0, 0, fuzzDoSucceed, 1, fuzzDoSucceed),
			batch(fuzzBatchPlain, 1, block, 0, 0, fuzzDoSucceed),
			ops(fuzzOpShutdown, 2, fuzzOpClose, fuzzOpReleaseAll))},
		{0, cat(flat, hold, batch(fuzzBatchPlain, 0, block, 15<<3, 1, fuzzDoSucceed, 2, fuzzDoSucceed),
			batch(fuzzBatchPlain, 0, block, 14<<3, 1, fuzzDoSucceed), ops(fuzzOpReleaseAll))},
		{6, cat(ops(0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 3, 0, 0), ops(fuzzOpSubmit, 1, fuzzDoBlock, 0, 0, 1, fuzzOpOverride, 1, 0),
			batch(fuzzBatchPlain, 0, block|4, 0, 1, fuzzDoSucceed, 1, fuzzDoBlock, 3, fuzzDoSucceed), ops(2),
			batch(fuzzBatchPlain, 2, block, 0, 2, fuzzDoSucceed, 0, fuzzDoSucceed), ops(4),
			ops(fuzzOpOverride, 1, 1, fuzzOpRelease, 0, fuzzOpReleaseAll, fuzzOpSleep, 3))},
	} {
		for _, mode := range []byte{0, 1} {
			seeds = append(seeds, append([]byte{seed.shape | mode}, seed.ops...))
		}
	}
	return seeds
}
