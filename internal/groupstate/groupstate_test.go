package groupstate

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestLineServesWaitersInJoinOrder: only the head waits in Acquire, so
// permits go out in join order whatever order the goroutines run in.
func TestLineServesWaitersInJoinOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLine(1)
		require.True(t, l.tryAcquire())
		const n = 10
		ws := make([]waiter, n)
		got := make(chan int, n)
		for i := range ws {
			require.False(t, l.join(&ws[i]))
		}
		for i := n - 1; i >= 0; i-- { // start them in reverse
			go func() {
				if ws[i].wait(nil, t.Context().Done()) {
					got <- i
				}
			}()
		}
		for want := range n {
			synctest.Wait()
			l.release()
			assert.Equal(t, want, <-got)
		}
		l.release()
		assert.Zero(t, l.count.Load())
	})
}

// TestLineNewcomerNeverPassesAWaiter: a free permit owed to a waiter that
// has not claimed it yet is not taken by tryAcquire.
func TestLineNewcomerNeverPassesAWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLine(1)
		require.True(t, l.tryAcquire())
		var w waiter
		require.False(t, l.join(&w))
		l.release()
		require.False(t, l.tryAcquire(), "a newcomer passed the waiter")
		require.True(t, w.wait(nil, t.Context().Done()))
		l.release()
		assert.True(t, l.tryAcquire(), "line empty and a permit free")
	})
}

// TestLineCancelledWaiterLeavesAndPassesTheHead: a waiter cancelled in the
// middle or at the head leaves, and the one behind still gets the permit.
func TestLineCancelledWaiterLeavesAndPassesTheHead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLine(1)
		require.True(t, l.tryAcquire())
		var head, middle, last waiter
		for _, w := range []*waiter{&head, &middle, &last} {
			require.False(t, l.join(w))
		}
		headCtx, cancelHead := context.WithCancel(t.Context())
		got := make(chan bool, 2)
		go func() { got <- head.wait(headCtx.Done(), nil) }()
		go func() { got <- middle.wait(nil, nil) }()
		lastDone := make(chan bool, 1)
		go func() { lastDone <- last.wait(nil, nil) }()
		synctest.Wait()
		middle.interrupt()
		cancelHead()
		assert.False(t, <-got, "a cancelled waiter holds no permit")
		assert.False(t, <-got, "a cancelled waiter holds no permit")
		l.release()
		require.True(t, <-lastDone)
		assert.Zero(t, l.count.Load())
		l.release()
		assert.True(t, l.sem.TryAcquire(1), "every permit back")
	})
}

func testGroup(t *testing.T, l Limits, global, globalQueue int) (*Global, *Group) {
	t.Helper()
	r := NewRegistry(context.Background(), func(string) Limits { return l })
	return NewGlobal(global, globalQueue), r.Get("g")
}

// TestPermitsRejectionReleasesEverythingHeld: a task that holds the global
// permit and finds no group queue slot gives the global permit back.
func TestPermitsRejectionReleasesEverythingHeld(t *testing.T) {
	gl, g := testGroup(t, Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 0}, 2, Unlimited)
	var first, second Permits
	first.Init(gl, g)
	out, _ := first.Try()
	require.Equal(t, Admitted, out)
	second.Init(gl, g)
	out, reason := second.Try()
	require.Equal(t, Rejected, out)
	assert.Equal(t, "group queue threshold 0 reached", reason)
	_, _, inFlight := gl.Counts()
	assert.Equal(t, 1, inFlight, "the rejected task kept its global permit")
	first.Release()
	assert.NoError(t, gl.Probe())
	assert.NoError(t, g.Probe())
	running, waiting, inFlight := g.Counts()
	assert.Equal(t, [3]int{0, 0, 0}, [3]int{running, waiting, inFlight})
}

// TestPermitsKeepTheGroupSlotFromBulkheadToConcurrency: one slot covers a
// task's wait at layer 2 and then at layer 3.
func TestPermitsKeepTheGroupSlotFromBulkheadToConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gl, g := testGroup(t, Limits{Concurrency: 1, MaxInFlight: 1, QueueThreshold: 1}, Unlimited, Unlimited)
		var a, b Permits
		a.Init(gl, g)
		out, _ := a.Try()
		require.Equal(t, Admitted, out)
		b.Init(gl, g)
		out, _ = b.Try()
		require.Equal(t, MustWait, out, "b waits at the bulkhead")
		done := make(chan Outcome)
		go func() {
			var cancelled atomic.Bool
			out, _ := b.Wait(Stop{Scope: t.Context().Done(), Cancelled: &cancelled})
			done <- out
		}()
		synctest.Wait()
		a.Release()
		assert.Equal(t, Admitted, <-done)
		b.Release()
		assert.NoError(t, g.Probe())
	})
}

// TestPermitsReleaseIsIdempotent: a second Release changes nothing.
func TestPermitsReleaseIsIdempotent(t *testing.T) {
	gl, g := testGroup(t, Limits{Concurrency: 2, MaxInFlight: 2, QueueThreshold: Unlimited}, 2, Unlimited)
	var p Permits
	p.Init(gl, g)
	out, _ := p.Try()
	require.Equal(t, Admitted, out)
	p.Release()
	p.Release()
	assert.NoError(t, errors.Join(gl.Probe(), g.Probe()))
	_, _, inFlight := gl.Counts()
	assert.Zero(t, inFlight)
}
