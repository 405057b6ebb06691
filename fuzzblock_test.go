package groupconc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// FuzzOps' blocking submissions: a SubmitWith{Block} call runs on a
// goroutine of its own; after each step the harness collects the calls
// that returned, tracking the tasks they submitted.

// fuzzSubmitOptions decodes a submission's options from one byte: a
// priority (the zero one among them), whether it blocks, and a MaxWait.
func fuzzSubmitOptions(v byte) groupconc.SubmitOptions {
	return groupconc.SubmitOptions{
		Priority: groupconc.Priority(v % 6),
		Block:    v&0x40 != 0,
		MaxWait:  time.Duration(v>>3%4) * time.Millisecond,
	}
}

// fuzzBlocked is one SubmitWith{Block} call.
type fuzzBlocked struct {
	ft   *fuzzTask
	h    *groupconc.TaskHandle[int]
	err  error
	done chan struct{}
}

func fuzzSubmitBlocking(o *oracle, gaugeKey string, ctx context.Context, e *groupconc.GroupExecutor, key, id string, fn groupconc.Task[int], opts groupconc.SubmitOptions, ft *fuzzTask) *fuzzBlocked {
	b := &fuzzBlocked{ft: ft, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		b.h, b.err = oracleSubmitWith(o, gaugeKey, ctx, e, key, id, fn, opts)
	}()
	return b
}

// fuzzHarvest moves the blocked calls that returned out of blocked: an
// accepted task joins tasks; a refused one must have ended for a reason
// the endings table names.
func fuzzHarvest(t *testing.T, blocked []*fuzzBlocked, tasks []*fuzzTask) ([]*fuzzBlocked, []*fuzzTask) {
	t.Helper()
	still := blocked[:0]
	for _, b := range blocked {
		select {
		case <-b.done:
		default:
			still = append(still, b)
			continue
		}
		if b.err == nil {
			b.ft.h = b.h
			tasks = append(tasks, b.ft)
			continue
		}
		ok := errors.Is(b.err, context.Canceled) || errors.Is(b.err, groupconc.ErrClosed) ||
			errors.Is(b.err, groupconc.ErrGroupShutdown) || errors.Is(b.err, groupconc.ErrGroupEvicted)
		assert.True(t, ok, "a blocked SubmitWith ended with %v", b.err)
	}
	return still, tasks
}
