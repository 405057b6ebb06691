package groupconc_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// entry is one way to hand the executor a task: Submit, SubmitWith with
// some options, or Do on a goroutine of its own.
type entry struct {
	name string
	opts groupconc.SubmitOptions
	do   bool
}

// entries are the ways a sentence of the contract applies to.
var entries = []entry{
	{name: "Submit"},
	{name: "SubmitWith/Priority", opts: groupconc.SubmitOptions{Priority: groupconc.PriorityHigh}},
	{name: "SubmitWith/Block", opts: groupconc.SubmitOptions{Block: true}},
	{name: "SubmitWith/MaxWait", opts: groupconc.SubmitOptions{Block: true, MaxWait: time.Hour}},
	{name: "Do", do: true},
	{name: "Do/Block", opts: groupconc.SubmitOptions{Block: true}, do: true},
}

// costEntries are the entries that take a cost (Submit takes none).
var costEntries = entries[1:]

// forEachEntry runs f in a subtest per isolation mode and entry.
func forEachEntry(t *testing.T, es []entry, f func(t *testing.T, mode groupconc.IsolationMode, en entry)) {
	t.Helper()
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for _, en := range es {
			t.Run(en.name, func(t *testing.T) { f(t, mode, en) })
		}
	})
}

// call is one task handed in by an entry: a handle, or a Do running.
type call struct {
	h *groupconc.TaskHandle[int]
	d *doAsync
	b *blocked
}

// start hands fn to key through en, with cost. A Submit or SubmitWith
// must be accepted. A Do, or a Block call, runs on a goroutine of its own.
// start returns once the task has entered, or waits. An empty id gets one
// made from a count. Call it in a bubble.
func (en entry) start(t *testing.T, ctx context.Context, e *groupconc.GroupExecutor, key, id string, cost int, fn groupconc.Task[int]) *call {
	t.Helper()
	o := en.opts
	o.Cost = cost
	if id == "" {
		id = "call-" + strconv.FormatInt(gatedIDs.Add(1), 10)
	}
	c := new(call)
	switch {
	case en.do:
		c.d = goDo(ctx, e, key, fn, o)
	case en.name == "Submit":
		require.Zero(t, cost, "Submit takes no cost")
		c.h = submit(t, ctx, e, key, id, fn)
	case o.Block:
		c.b = submitBlocking(ctx, e, key, id, fn, o)
	default:
		h, err := groupconc.SubmitWith(ctx, e, key, id, fn, o)
		require.NoError(t, err)
		c.h = h
	}
	// The call has entered, waits or runs, so it comes before what
	// follows. A Block call returns at once unless it must wait for a slot.
	synctest.Wait()
	return c
}

// done reports whether the task has ended (the Do returned).
func (c *call) done() bool {
	switch {
	case c.d != nil:
		return c.d.returned()
	case c.b != nil:
		return c.b.returned() && (c.b.err != nil || c.b.h.IsDone())
	}
	return c.h.IsDone()
}

// status waits for the task to end and reports how, with its error: the
// result's Err, or the error Do returned (a Do ends CANCELLED when it
// returns a context error or ErrClosed, REJECTED on ErrRejected).
func (c *call) status() (groupconc.TaskStatus, error) {
	if h := c.handle(); h != nil {
		r := h.Wait()
		return r.Status, r.Err
	}
	var err error
	if c.d != nil {
		<-c.d.done
		err = c.d.err
	} else {
		err = c.b.err
	}
	switch {
	case err == nil:
		return groupconc.StatusSuccess, nil
	case errors.Is(err, groupconc.ErrRejected):
		return groupconc.StatusRejected, err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, groupconc.ErrClosed):
		return groupconc.StatusCancelled, err
	default:
		return groupconc.StatusFailed, err
	}
}

// handle returns the task's handle, once a Block call has returned one.
// It returns nil for a Do and for a Block call that failed.
func (c *call) handle() *groupconc.TaskHandle[int] {
	if c.b != nil {
		<-c.b.done
		return c.b.h
	}
	return c.h
}

// handles returns the handles of cs (a Do has none).
func handles(cs ...*call) []*groupconc.TaskHandle[int] {
	var hs []*groupconc.TaskHandle[int]
	for _, c := range cs {
		if c.d == nil {
			if h := c.handle(); h != nil {
				hs = append(hs, h)
			}
		}
	}
	return hs
}
