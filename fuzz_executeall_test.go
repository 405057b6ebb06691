package groupconc_test

// FuzzOps' ExecuteAll calls. An op byte of fuzzOpByteExecuteAll or more
// calls groupconc.ExecuteAll with one to four gated tasks over the keys.
// No input kept in testdata has such an op byte, so they decode as before.
// The call runs on a goroutine of its own, with a plain, a cancellable or
// a done context, or inside a task it submits, with a child of that task's
// context. Release and CancelCtx ops pick among its tasks too. After each
// step the harness checks the calls that returned. Their results come in
// order, each status matches what its task did, and so does the error. A
// call that still waits once its ctx has ended, or every task of its own
// has, is hung.

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// fuzzOpExecuteAll is the op of the op bytes from fuzzOpByteExecuteAll up,
// and fuzzOpExecuteAllWith that of the bytes from fuzzOpByteExecuteAllWith
// up to those (fuzz_executeallwith_test.go).
const (
	fuzzOpExecuteAll         = fuzzOpCountTree
	fuzzOpExecuteAllWith     = fuzzOpCountTree + 1
	fuzzOpByteExecuteAll     = 0xe0
	fuzzOpByteExecuteAllWith = 0xd0
)

// op decodes an op byte.
func (sh *fuzzShape) op(v byte) int {
	switch {
	case v >= fuzzOpByteExecuteAll:
		return fuzzOpExecuteAll
	case v >= fuzzOpByteExecuteAllWith:
		return fuzzOpExecuteAllWith
	}
	return int(v) % sh.ops
}

// How an ExecuteAll call gets its context.
const (
	fuzzBatchPlain = iota
	fuzzBatchCancellable
	fuzzBatchDone
	fuzzBatchInside // in a task of its own, with a child of the task's context
)

// fuzzBatchTask is one task of an ExecuteAll call.
type fuzzBatchTask struct {
	ft      *fuzzTask
	key, id string
	calls   atomic.Int32
	inFn    atomic.Bool
	sleep   time.Duration
	seenAt  int // the harvest that first heard it submitted, or 0

	// endedLive is set as fn returns, panics or exits while ExecuteAll's
	// ctx is live: the task finished before ctx ended.
	endedLive atomic.Bool
	ended     fuzzMoment // when it ended
}

// fuzzBatch is one ExecuteAll call.
type fuzzBatch struct {
	name    string
	how     int
	tasks   []*fuzzBatchTask
	done    chan struct{}
	ctxDone <-chan struct{} // ExecuteAll's ctx's
	dl      time.Time       // its deadline, if it has one
	checked bool
	with    *fuzzWith // for ExecuteAllWith, or nil

	// Written before done closes.
	results []groupconc.GroupResult[int]
	err     error
	ctxErr  error     // ctx.Err() just after ExecuteAll returned
	endedAt time.Time // when it returned
	ctxEnd  fuzzMoment
}

// fuzzBatches are the ExecuteAll calls of one run. Tasks of the run add
// the calls made inside them.
type fuzzBatches struct {
	mu       sync.Mutex
	batches  []*fuzzBatch // guarded by mu
	n        int          // guarded by mu: the calls, to name them
	outers   []*fuzzOuter // the tasks that call ExecuteAll inside
	harvests atomic.Int64 // harvest's calls: the step, to order what it hears
}

// fuzzOuter is a task that calls ExecuteAll as it starts.
type fuzzOuter struct {
	h       *groupconc.TaskHandle[int]
	started atomic.Bool
}

// idleGroups is fuzzIdleGroups, but none is idle while a task that calls
// ExecuteAll may still start, or an ExecuteAllWith call may still wait: it
// may submit to any group at any time.
func (bs *fuzzBatches) idleGroups(e *groupconc.GroupExecutor, o *oracle, p *groupconc.GroupPolicy, keys []string) []string {
	if bs.blocking() {
		return nil
	}
	for _, x := range bs.outers {
		if !x.started.Load() && !x.h.IsDone() {
			return nil
		}
	}
	return fuzzIdleGroups(e, o, p, keys)
}

func (bs *fuzzBatches) all() []*fuzzBatch {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return slices.Clone(bs.batches)
}

// gated returns the tasks of every call, for an op that opens a gate or
// cancels a context.
func (bs *fuzzBatches) gated() []*fuzzTask {
	var fts []*fuzzTask
	for _, b := range bs.all() {
		for _, bt := range b.tasks {
			fts = append(fts, bt.ft)
		}
	}
	return fts
}

// openAll opens the gate of every task of every call.
func (bs *fuzzBatches) openAll() {
	for _, ft := range bs.gated() {
		ft.open()
	}
}

// start decodes an ExecuteAll op, or with with set an ExecuteAllWith op,
// and makes the call. Inside a task, it submits that task, tracked with
// tasks, and the task makes the call as it starts. gaugeKeyOf is then
// called on the task's goroutine.
func (bs *fuzzBatches) start(t *testing.T, in *fuzzBytes, o *oracle, e *groupconc.GroupExecutor, sh *fuzzShape, tasks []*fuzzTask, gaugeKeyOf func(string) string, with bool) []*fuzzTask {
	keys := sh.keys
	v := in.next()
	n, how := 1+int(v%4), int(v/4%4)
	outer := keys[int(in.next())%len(keys)]
	specs := make([][2]byte, n)
	for i := range specs {
		specs[i] = [2]byte{in.next(), in.next()}
	}
	var w *fuzzWith
	if with {
		w = fuzzDecodeWith(in, sh)
	}
	if len(bs.gated())+len(tasks) >= 64 {
		return tasks
	}
	bs.mu.Lock()
	name := fmt.Sprintf("x%d", bs.n)
	bs.n++
	bs.mu.Unlock()
	call := func(ctx context.Context) {
		b := fuzzNewBatch(o, name, how, keys, specs)
		b.with = w
		var cancel context.CancelFunc = func() {}
		switch how {
		case fuzzBatchCancellable, fuzzBatchInside:
			ctx, cancel = context.WithCancel(ctx)
			for _, bt := range b.tasks {
				bt.ft.cancelCtx = cancel
			}
		case fuzzBatchDone:
			ctx, cancel = context.WithCancel(ctx)
			cancel()
		}
		ctx, cancel = w.context(ctx, cancel)
		stop := context.AfterFunc(ctx, func() { b.ctxEnd.mark(&bs.harvests) })
		b.ctxDone = ctx.Done()
		b.dl, _ = ctx.Deadline()
		gts := b.groupTasks(o, gaugeKeyOf, &bs.harvests)
		bs.mu.Lock()
		bs.batches = append(bs.batches, b)
		bs.mu.Unlock()
		run := func() {
			defer close(b.done)
			defer cancel()
			defer stop()
			b.results, b.err = b.execute(ctx, e, gts)
			b.ctxErr, b.endedAt = ctx.Err(), time.Now()
		}
		if how == fuzzBatchInside {
			run() // on the task's own goroutine
		} else {
			go run()
		}
	}
	if how != fuzzBatchInside {
		call(t.Context())
		return tasks
	}
	ft := &fuzzTask{do: fuzzDoSucceed, gate: make(chan struct{})}
	close(ft.gate)
	id := name + "-outer"
	x := new(fuzzOuter)
	h, err := oracleSubmitWith(o, gaugeKeyOf(outer), t.Context(), e, outer, id, func(ctx context.Context) (int, error) {
		x.started.Store(true)
		call(ctx)
		return 1, nil
	}, groupconc.SubmitOptions{})
	if err != nil {
		assert.ErrorIs(t, err, groupconc.ErrClosed, "Submit of a valid task fails only once closed")
		return tasks
	}
	ft.h, x.h = h, h
	bs.outers = append(bs.outers, x)
	return append(tasks, ft)
}

// fuzzNewBatch decodes the tasks of a call, and lets the oracle know them
// as tasks that may be accepted.
func fuzzNewBatch(o *oracle, name string, how int, keys []string, specs [][2]byte) *fuzzBatch {
	b := &fuzzBatch{name: name, how: how, done: make(chan struct{})}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, s := range specs {
		bt := &fuzzBatchTask{
			ft:    &fuzzTask{do: int(s[1]) % fuzzDoPreCancelled, gate: make(chan struct{})},
			key:   keys[int(s[0])%len(keys)],
			id:    fmt.Sprintf("%s.%d", name, i),
			sleep: time.Duration(1+s[1]>>3%4) * time.Millisecond,
		}
		// Its events are those of an accepted task, though no handle
		// of the harness tracks it.
		o.doKeys[oracleKey(bt.key, bt.id)] = true
		b.tasks = append(b.tasks, bt)
	}
	return b
}

// fn returns the function of bt, which does what bt.ft.do says. ctxDone
// is ExecuteAll's ctx's.
func (bt *fuzzBatchTask) fn(ctxDone <-chan struct{}, step *atomic.Int64) groupconc.Task[int] {
	return func(ctx context.Context) (int, error) {
		bt.calls.Add(1)
		bt.inFn.Store(true)
		defer func() {
			bt.endedLive.Store(!fuzzClosed(ctxDone))
			bt.ended.mark(step)
			bt.inFn.Store(false)
		}()
		switch bt.ft.do {
		case fuzzDoFail:
			return 0, fuzzError{}
		case fuzzDoPanic:
			panic(fuzzError{})
		case fuzzDoGoexit:
			runtime.Goexit()
		case fuzzDoBlock:
			<-bt.ft.gate
		case fuzzDoBlockCtx, fuzzDoSleep:
			var after <-chan time.Time
			if bt.ft.do == fuzzDoSleep {
				after = time.After(bt.sleep)
			}
			select {
			case <-bt.ft.gate:
			case <-after:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		return 1, nil
	}
}

// harvest checks the calls that returned since it last looked. It reports
// a call hung that waits though the bubble is still and its ctx has ended.
// So is one whose every task was heard to end, with none of its functions
// running. With over set every task is over, so any call still waiting is.
func (bs *fuzzBatches) harvest(t *testing.T, o *oracle, over bool) {
	t.Helper()
	bs.harvests.Add(1)
	for _, b := range bs.all() {
		if b.checked {
			continue
		}
		b.see(o, int(bs.harvests.Load()))
		select {
		case <-b.done:
			b.checked = true
			bs.check(t, o, b)
			continue
		default:
		}
		ctxEnded := b.ctxDone != nil && fuzzClosed(b.ctxDone)
		if over || ctxEnded || b.quiet(o) {
			b.checked = true
			t.Errorf("ExecuteAll %s (%d) still waits, though its ctx ended (%v) or every task of its has (over %v)", b.name, b.how, ctxEnded, over)
		}
	}
}

// quiet reports whether every task of b was heard to end and none of its
// functions runs: b's ExecuteAll has nothing left to wait for.
func (b *fuzzBatch) quiet(o *oracle) bool {
	for _, bt := range b.tasks {
		l, _ := o.rec.lookup(bt.key, bt.id)
		seq := l.seq()
		ended := slices.Contains(seq, oracleCompleted) || slices.Equal(seq, oracleLifes[2])
		if !ended || bt.inFn.Load() {
			return false
		}
	}
	return true
}

// afterClose reports the calls that still wait once Close has returned and
// the bubble is still, though none of their functions runs.
func (bs *fuzzBatches) afterClose(t *testing.T) {
	t.Helper()
	for _, b := range bs.all() {
		busy := slices.ContainsFunc(b.tasks, func(bt *fuzzBatchTask) bool { return bt.inFn.Load() })
		select {
		case <-b.done:
		default:
			if !busy {
				t.Errorf("ExecuteAll %s still waits after Close returned, and no function of its runs", b.name)
			}
		}
	}
}
