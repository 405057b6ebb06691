package groupconc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Task A of e2 (group g, limit 1) submits task B to another executor e1
// with its own context, and B calls Do on e2's group g. B's context derives
// from A's, a running task of e2, so the Do runs fn at once, under A's
// permits. It used to wait for the permit A holds while A waited for B.
func TestADoThroughAnotherExecutorsTaskRunsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e1 := newExecutor(t, builder())
		e2 := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(1))
		a := submit(t, t.Context(), e2, "g", "A", func(ctxA context.Context) (int, error) {
			b := submit(t, ctxA, e1, "x", "B", func(ctxB context.Context) (int, error) {
				return groupconc.Do(ctxB, e2, "g", func(context.Context) (int, error) { return 7, nil }, groupconc.SubmitOptions{})
			})
			r := b.Wait()
			return r.Value, r.Err
		})
		synctest.Wait()
		require.True(t, a.IsDone(), "the Do waits for the permit its caller's task holds")
		r := a.Wait()
		assert.Equal(t, groupconc.StatusSuccess, r.Status)
		assert.Equal(t, 7, r.Value)
	})
}

// The same through SubmitWith with Block, at a queue threshold of 0: a
// caller inside a task of the executor never blocks.
func TestABlockingSubmitThroughAnotherExecutorsTaskNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e1 := newExecutor(t, builder())
		e2 := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0))
		a := submit(t, t.Context(), e2, "g", "A", func(ctxA context.Context) (int, error) {
			b := submit(t, ctxA, e1, "x", "B", func(ctxB context.Context) (int, error) {
				h, err := groupconc.SubmitWith(ctxB, e2, "g", "C", succeed, groupconc.SubmitOptions{Block: true})
				if err != nil {
					return 0, err
				}
				return int(h.Wait().Status), nil
			})
			r := b.Wait()
			return r.Value, r.Err
		})
		synctest.Wait()
		require.True(t, a.IsDone(), "the caller blocks for a slot")
	})
}

// noDone is a caller's context with no Done channel whose Err is set once
// ended is. It breaks the context contract, but it has ended.
type noDone struct {
	context.Context
	ended atomic.Bool
	err   error
}

func (c *noDone) Done() <-chan struct{} { return nil }

func (c *noDone) Err() error {
	if c.ended.Load() {
		return c.err
	}
	return nil
}

// A task that must wait, of a caller with no Done channel that has ended,
// ends CANCELLED with an Err, as every CANCELLED result has one.
func TestACallerWithNoDoneThatHasEndedGivesItsTaskAnErr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().DefaultMaxConcurrencyPerGroup(1))
		hold := newGatedTask(t, 0)
		h0 := submit(t, t.Context(), e, "a", "hold", hold.Fn)
		c := &noDone{Context: context.Background(), err: context.Canceled}
		c.ended.Store(true)
		h := submit(t, c, e, "a", "w", succeed)
		r := doneResult(t, h)
		assert.Equal(t, groupconc.StatusCancelled, r.Status)
		assert.ErrorIs(t, r.Err, context.Canceled)
		hold.Release()
		h0.Wait()
	})
}

// movingDeadline is a caller's context whose Deadline changes, as the
// context contract forbids. Its Err says DeadlineExceeded once it ends.
type movingDeadline struct {
	context.Context
	dl atomic.Pointer[time.Time]
}

func (c *movingDeadline) Deadline() (time.Time, bool) { return *c.dl.Load(), true }

func (c *movingDeadline) Err() error {
	if c.Context.Err() != nil {
		return context.DeadlineExceeded
	}
	return nil
}

// A caller whose deadline moved closer, and which then ended by it, ends
// its task's context. The context used to stay open until the deadline
// it first read, an hour on.
func TestACallerWhoseDeadlineMovesStillEndsItsTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder())
		base, cancel := context.WithCancel(context.Background())
		c := &movingDeadline{Context: base}
		far := time.Now().Add(time.Hour)
		c.dl.Store(&far)
		started := make(chan struct{})
		h := submit(t, c, e, "a", "t", func(ctx context.Context) (int, error) {
			done := ctx.Done()
			close(started)
			<-done
			return 0, ctx.Err()
		})
		<-started
		time.Sleep(time.Second) // fake time passes
		near := time.Now().Add(-time.Millisecond)
		c.dl.Store(&near)
		cancel()
		synctest.Wait()
		require.True(t, h.IsDone(), "the task's context is still open")
		assert.Equal(t, groupconc.StatusCancelled, h.Wait().Status)
	})
}
