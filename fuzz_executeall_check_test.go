package groupconc_test

// The checks of FuzzOps' ExecuteAll calls (fuzz_executeall_test.go), and
// seeds that make them.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// check checks what b's ExecuteAll returned. There is one result a task,
// in the order of the tasks. A task the listener never heard of was
// refused as the executor closed. Each accepted task ended as its function
// decides, unless it never ran or ctx ended first. The error is ErrClosed
// after a refusal, or else ctx's or nil, and ctx's if the harness ended
// ctx. It counts each accepted task's status for the outcome checks.
func (bs *fuzzBatches) check(t *testing.T, o *oracle, b *fuzzBatch) {
	t.Helper()
	name := fmt.Sprintf("ExecuteAll %s (%d)", b.name, b.how)
	if b.with != nil {
		name = "ExecuteAllWith" + strings.TrimPrefix(name, "ExecuteAll")
	}
	if b.with != nil && b.with.invalid() {
		b.checkInvalid(t, o, name)
		return
	}
	if !assert.Len(t, b.results, len(b.tasks), "%s: one result a task", name) {
		return
	}
	var stop error // why the call stopped submitting, if it did
	for i, bt := range b.tasks {
		r := b.results[i]
		tn := fmt.Sprintf("%s: results[%d] (%s/%s, fn %d)", name, i, bt.key, bt.id, bt.ft.do)
		assert.Equal(t, bt.key+"/"+bt.id, r.GroupKey+"/"+r.TaskID, "%s: results in the order of the tasks", tn)
		assert.LessOrEqual(t, bt.calls.Load(), int32(1), "%s: fn called more than once", tn)
		l, _ := o.rec.lookup(bt.key, bt.id)
		if !slices.Contains(l.seq(), oracleSubmitted) {
			assert.Equal(t, groupconc.StatusCancelled, r.Status, "%s: a task never accepted", tn)
			assert.Zero(t, bt.calls.Load(), "%s: fn of a task never accepted ran", tn)
			stop = b.checkRefused(t, tn, r.Err, stop)
			continue
		}
		if stop != nil {
			t.Errorf("%s: accepted after the call stopped with %v", tn, stop)
		}
		o.final(r.Status)
		ran := slices.Contains(l.seq(), oracleStarted)
		assert.Equal(t, ran, bt.calls.Load() == 1, "%s: fn called %d times, heard %v", tn, bt.calls.Load(), &l)
		if b.how == fuzzBatchDone {
			assert.False(t, ran, "%s: ran though ctx was done before the call", tn)
		}
		fuzzCheckBatchResult(t, tn, b, bt, r, ran, o.handler)
	}
	b.checkWith(t, o, name)
	switch {
	case stop != nil:
		assert.Equal(t, stop, b.err, "%s: the error once the call stopped", name)
	case b.err != nil:
		assert.Equal(t, b.ctxErr, b.err, "%s: the error is ctx's", name)
	case b.ctxErr != nil && b.endsAlone():
		// Only the harness ends such a ctx, while the call waits.
		t.Errorf("%s: nil error though ctx ended: %v", name, b.ctxErr)
	}
}

// fuzzCheckBatchResult checks the result r of an accepted task of a batch.
// A function that ran decides it, unless it was cancelled. That takes ctx
// ending before fn returned, or a fn that heeds its own context. A task
// that never ran was cancelled or rejected, or a rejection handler decided.
func fuzzCheckBatchResult(t *testing.T, tn string, b *fuzzBatch, bt *fuzzBatchTask, r groupconc.GroupResult[int], ran, handler bool) {
	t.Helper()
	ctxErr := b.ctxErr
	ctxEnded := ctxErr != nil
	do := bt.ft.do
	waits := do == fuzzDoBlock || do == fuzzDoBlockCtx || do == fuzzDoSleep
	switch r.Status {
	case groupconc.StatusSuccess:
		if ran {
			assert.True(t, do == fuzzDoSucceed || waits, "%s: SUCCESS from this fn", tn)
			assert.Equal(t, 1, r.Value, "%s: fn's value", tn)
		} else {
			assert.True(t, handler, "%s: SUCCESS but fn never ran", tn)
			assert.Equal(t, -1, r.Value, "%s: the handler's value", tn)
		}
		assert.NoError(t, r.Err, tn)
	case groupconc.StatusFailed:
		switch {
		case !ran:
			assert.True(t, handler, "%s: FAILED but fn never ran: %v", tn, r.Err)
		case do == fuzzDoFail:
			assert.ErrorIs(t, r.Err, fuzzError{}, "%s: the task's own error, unwrapped", tn)
		default:
			var pe *groupconc.PanicError
			assert.True(t, (do == fuzzDoPanic || do == fuzzDoGoexit) && errors.As(r.Err, &pe), "%s: FAILED with %v", tn, r.Err)
		}
	case groupconc.StatusCancelled:
		// A deadline's. A task's context expires at it by itself, maybe
		// just before ctx does.
		byCtx := (ctxEnded && errors.Is(r.Err, ctxErr)) || b.pastDeadline(r)
		assert.True(t, errors.Is(r.Err, context.Canceled) || byCtx, "%s: CANCELLED with %v (ctx %v)", tn, r.Err, ctxErr)
		if ran {
			// ExecuteAll cancels a task only if ctx ended before it finished.
			ok := (ctxEnded && !bt.endedLive.Load()) || do == fuzzDoBlockCtx || do == fuzzDoSleep || b.endedWithCtx(bt)
			assert.True(t, ok, "%s: CANCELLED after fn ran (ctx ended %v, fn ended before it %v)", tn, ctxEnded, bt.endedLive.Load())
		}
	case groupconc.StatusRejected:
		assert.False(t, ran, "%s: REJECTED after fn ran", tn)
		var rj *groupconc.RejectedError
		if assert.ErrorAs(t, r.Err, &rj, tn) {
			assert.Equal(t, bt.key+"/"+bt.id, rj.GroupKey+"/"+rj.TaskID, "%s: the rejection's task", tn)
		}
	default:
		t.Errorf("%s: status %v", tn, r.Status)
	}
}

// checkHeard checks, once every task is over, that the listener heard
// each accepted task of a batch end with the status ExecuteAll returned.
func (bs *fuzzBatches) checkHeard(t *testing.T, o *oracle) {
	t.Helper()
	for _, b := range bs.all() {
		select {
		case <-b.done:
		default:
			continue // harvest reported it
		}
		for i, bt := range b.tasks {
			l, _ := o.rec.lookup(bt.key, bt.id)
			if slices.Contains(l.seq(), oracleCompleted) && i < len(b.results) {
				assert.Equal(t, b.results[i].Status, l.completed, "ExecuteAll %s: results[%d] against OnCompleted", b.name, i)
			}
		}
	}
}

// fuzzExecuteAllSeeds are FuzzOps seeds with ExecuteAll calls, each in
// both modes: every behaviour behind a busy group, released one by one; a
// ctx cancelled part way; a ctx done before the call; a call inside a
// task of a group of limit 1 that waits for that group, until the task is
// cancelled; calls through ShutdownGroup, EvictGroup, an expired Shutdown
// and Close; and calls over parents and costs under a pause.
func fuzzExecuteAllSeeds() [][]byte {
	const xa = fuzzOpByteExecuteAll
	batch := func(how byte, outer byte, pairs ...byte) []byte {
		return append([]byte{xa, byte(len(pairs)/2-1) | how<<2, outer}, pairs...)
	}
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	ops := func(b ...byte) []byte { return b }
	flat := ops(0, 0, 0, 0, 0, 0, 0, 0, 0, 0) // concurrency 1 a group
	var seeds [][]byte
	for _, seed := range []struct {
		shape byte
		ops   []byte
	}{
		{0, cat(flat, ops(fuzzOpSubmit, 0, fuzzDoBlock, 0, 0),
			batch(fuzzBatchPlain, 0, 0, fuzzDoSucceed, 0, fuzzDoFail, 1, fuzzDoPanic, 2, fuzzDoGoexit),
			batch(fuzzBatchPlain, 0, 1, fuzzDoBlock, 1, fuzzDoBlockCtx, 2, fuzzDoSleep|2<<3),
			ops(fuzzOpRelease, 0, fuzzOpSleep, 2, fuzzOpRelease, 1, fuzzOpReleaseAll, fuzzOpSleep, 9))},
		{0, cat(flat, batch(fuzzBatchCancellable, 0, 0, fuzzDoBlockCtx, 0, fuzzDoBlock, 1, fuzzDoSucceed, 0, fuzzDoFail),
			ops(fuzzOpCancelCtx, 1, fuzzOpRelease, 1, fuzzOpReleaseAll))},
		{0, cat(flat, batch(fuzzBatchDone, 0, 0, fuzzDoSucceed, 1, fuzzDoBlock), ops(fuzzOpReleaseAll))},
		{0, cat(flat, batch(fuzzBatchInside, 0, 0, fuzzDoSucceed, 1, fuzzDoBlock),
			ops(fuzzOpRelease, 1, fuzzOpSleep, 3, fuzzOpCancel, 0, fuzzOpReleaseAll))},
		{0, cat(flat, batch(fuzzBatchInside, 1, 0, fuzzDoBlock, 1, fuzzDoSucceed),
			ops(fuzzOpShutdownGroup, 1, fuzzOpReleaseAll))},
		{0, cat(ops(1, 0, 1, 0, 1, 0, 0, 0, 0, 0), ops(fuzzOpSubmit, 0, fuzzDoBlock, 0, 0),
			batch(fuzzBatchPlain, 0, 0, fuzzDoBlock, 0, fuzzDoBlockCtx, 1, fuzzDoBlock, 2, fuzzDoSucceed),
			batch(fuzzBatchCancellable, 0, 1, fuzzDoBlock, 2, fuzzDoBlock),
			ops(fuzzOpShutdownGroup, 0, fuzzOpEvict, 1, fuzzOpShutdown, 2),
			batch(fuzzBatchPlain, 0, 2, fuzzDoSucceed), ops(fuzzOpClose, fuzzOpReleaseAll))},
		{0, cat(ops(0, 0, 0, 0, 1, 2, 0, 0, 0, 0), ops(fuzzOpSubmit, 0, fuzzDoBlock, 0, 0),
			batch(fuzzBatchPlain, 0, 0, fuzzDoBlock, 0, fuzzDoSucceed, 0, fuzzDoBlock), ops(fuzzOpReleaseAll))},
		{6, cat(ops(0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0), ops(fuzzOpOverride, 1, 0),
			batch(fuzzBatchPlain, 0, 0, fuzzDoBlock, 3, fuzzDoBlock, 1, fuzzDoSucceed, 2, fuzzDoBlock),
			batch(fuzzBatchInside, 2, 5, fuzzDoBlock, 3, fuzzDoSucceed),
			ops(fuzzOpOverride, 1, 1, fuzzOpRelease, 0, fuzzOpEvict, 1, fuzzOpReleaseAll, fuzzOpSleep, 3))},
	} {
		for _, mode := range []byte{0, 1} {
			seeds = append(seeds, append([]byte{seed.shape | mode}, seed.ops...))
		}
	}
	return seeds
}
