package groupstate

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestLineServesWaitersInJoinOrder: each released permit goes to the
// waiter at the head, taken out of the line, in join order.
func TestLineServesWaitersInJoinOrder(t *testing.T) {
	l := newLine(1)
	require.True(t, l.tryAcquire())
	const n = 10
	ws := make([]waiter, n)
	for i := range ws {
		require.False(t, l.join(&ws[i]))
	}
	for i := range n {
		w := l.release()
		require.Same(t, &ws[i], w, "permit %d went out of order", i)
		assert.Nil(t, w.line.Load(), "a granted waiter is out of line")
	}
	assert.Nil(t, l.release(), "no waiter left: the permit goes back")
	assert.Zero(t, l.count.Load())
	assert.True(t, l.sem.TryAcquire(1), "every permit back")
}

// TestLineNewcomerNeverPassesAWaiter: a permit released while a task waits
// goes to that task, never to tryAcquire or join.
func TestLineNewcomerNeverPassesAWaiter(t *testing.T) {
	l := newLine(1)
	require.True(t, l.tryAcquire())
	var w, newcomer waiter
	require.False(t, l.join(&w))
	require.Same(t, &w, l.release())
	require.False(t, l.tryAcquire(), "a newcomer took the waiter's permit")
	require.False(t, l.join(&newcomer), "a newcomer took the waiter's permit")
	require.Same(t, &newcomer, l.release())
	assert.Nil(t, l.release())
	assert.True(t, l.tryAcquire(), "line empty and a permit free")
}

// TestLineLeavingWaiterPassesTheHead: a waiter that leaves from the middle or
// the head gives up its place, the one behind still gets the permit, and a
// waiter already handed its permit cannot leave.
func TestLineLeavingWaiterPassesTheHead(t *testing.T) {
	l := newLine(1)
	require.True(t, l.tryAcquire())
	var head, middle, last waiter
	for _, w := range []*waiter{&head, &middle, &last} {
		require.False(t, l.join(w))
	}
	require.True(t, middle.leave())
	require.True(t, head.leave())
	assert.False(t, head.leave(), "left twice")
	require.Same(t, &last, l.release())
	assert.False(t, last.leave(), "a granted waiter is owned by its releaser")
	assert.Zero(t, l.count.Load())
	assert.Nil(t, l.release())
	assert.True(t, l.sem.TryAcquire(1), "every permit back")
}

// TestLineSweepTakesOutTheMatchingWaiters: sweep keeps the others in order.
func TestLineSweepTakesOutTheMatchingWaiters(t *testing.T) {
	l := newLine(1)
	require.True(t, l.tryAcquire())
	ps := make([]Permits, 5)
	for i := range ps {
		ps[i].w.owner = &ps[i]
		require.False(t, l.join(&ps[i].w))
	}
	odd := func(p *Permits) bool { return (p == &ps[1]) || (p == &ps[3]) }
	assert.Equal(t, []*Permits{&ps[1], &ps[3]}, l.sweep(odd, nil))
	for _, i := range []int{0, 2, 4} {
		require.Same(t, &ps[i].w, l.release())
	}
	assert.Empty(t, l.sweep(nil, nil))
	assert.Nil(t, l.release())
}

func testGroup(t *testing.T, l Limits, global, globalQueue int) (*Global, *Group) {
	t.Helper()
	gl := NewGlobal(global, globalQueue)
	r := NewRegistry(context.Background(), gl, func(string) Limits { return l })
	return gl, r.Get("g")
}

// TestPermitsRejectionReleasesEverythingHeld: a task that holds the global
// permit and finds no group queue slot gives the global permit back.
func TestPermitsRejectionReleasesEverythingHeld(t *testing.T) {
	gl, g := testGroup(t, Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 0}, 2, Unlimited)
	var first, second Permits
	first.Init(g, nil)
	out, _ := first.Try()
	require.Equal(t, Admitted, out)
	second.Init(g, nil)
	out, reason := second.Try()
	require.Equal(t, Rejected, out)
	assert.Equal(t, ReasonGroupQueueFull, reason)
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
	gl, g := testGroup(t, Limits{Concurrency: 1, MaxInFlight: 2, QueueThreshold: 1}, Unlimited, Unlimited)
	var a, b, c Permits
	a.Init(g, "a")
	out, _ := a.Try()
	require.Equal(t, Admitted, out)
	b.Init(g, "b")
	out, _ = b.Try()
	require.Equal(t, MustWait, out, "b waits at concurrency, holding the bulkhead and the slot")
	c.Init(g, "c")
	out, reason := c.Try()
	require.Equal(t, Rejected, out, "the only slot is b's")
	assert.Equal(t, ReasonGroupQueueFull, reason)
	a.Release()
	handed := a.Handed()
	require.Same(t, &b, handed, "a's concurrency permit went to b")
	assert.Equal(t, "b", handed.Owner())
	assert.Nil(t, a.Handed())
	out, _ = b.Resume()
	require.Equal(t, Admitted, out)
	running, waiting, inFlight := g.Counts()
	assert.Equal(t, [3]int{1, 0, 1}, [3]int{running, waiting, inFlight})
	b.Release()
	assert.Nil(t, b.Handed())
	assert.NoError(t, errors.Join(gl.Probe(), g.Probe()))
}

// TestPermitsWaitAtEachLayerInTurn: a task handed the global permit goes on
// to wait at the bulkhead, and the counts follow it.
func TestPermitsWaitAtEachLayerInTurn(t *testing.T) {
	gl, g := testGroup(t, Limits{Concurrency: 1, MaxInFlight: 1, QueueThreshold: Unlimited}, 1, Unlimited)
	other := NewRegistry(context.Background(), gl, func(string) Limits {
		return Limits{Concurrency: 1, MaxInFlight: 1, QueueThreshold: Unlimited}
	}).Get("other")
	var a, b Permits
	a.Init(other, "a") // holds the global permit
	out, _ := a.Try()
	require.Equal(t, Admitted, out)
	b.Init(g, "b")
	out, _ = b.Try()
	require.Equal(t, MustWait, out, "b waits at the global layer")
	_, waiting, _ := g.Counts()
	assert.Equal(t, 1, waiting)
	require.True(t, g.bulkhead.tryAcquire(), "someone else holds g's bulkhead")
	a.Release()
	require.Same(t, &b, a.Handed())
	out, _ = b.Resume()
	require.Equal(t, MustWait, out, "b now waits at the bulkhead, holding the global permit")
	_, _, inFlight := gl.Counts()
	assert.Equal(t, 1, inFlight)
	require.True(t, b.Leave(), "b leaves the bulkhead line")
	b.Release()
	g.bulkhead.release()
	_, waiting, _ = g.Counts()
	assert.Zero(t, waiting)
	assert.NoError(t, errors.Join(gl.Probe(), g.Probe(), other.Probe()))
}

// TestPermitsReleaseIsIdempotent: a second Release changes nothing.
func TestPermitsReleaseIsIdempotent(t *testing.T) {
	gl, g := testGroup(t, Limits{Concurrency: 2, MaxInFlight: 2, QueueThreshold: Unlimited}, 2, Unlimited)
	var p Permits
	p.Init(g, nil)
	out, _ := p.Try()
	require.Equal(t, Admitted, out)
	p.Release()
	p.Release()
	assert.NoError(t, errors.Join(gl.Probe(), g.Probe()))
	_, _, inFlight := gl.Counts()
	assert.Zero(t, inFlight)
}
