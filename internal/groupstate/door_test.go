package groupstate

// A caller woken from a queue holds the queue's door until its task has
// its place or it waits again (see slots.nudge). These tests check that
// the door is neither taken by a caller that was not woken nor kept by
// one that goes to wait elsewhere.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A caller that blocks while another, woken, holds its queue's door waits
// behind it and takes no door: a nudge meanwhile still wakes nobody, so
// the woken caller walks alone.
func TestACallerThatBlocksWhileTheDoorIsHeldLeavesItHeld(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 0, Weight: 1}))
	l, out := f.submit(t, "g", "l")
	require.Equal(t, Admitted, out)
	a, b, c := &tk{name: "a"}, &tk{name: "b"}, &tk{name: "c"}
	for _, k := range []*tk{a, b} {
		f.r.Enter("g", &k.p, k, f.now)
		require.Equal(t, Rejected, walk(t, k), "l holds g's permit")
	}
	g, _ := f.r.Lookup("g")
	require.Same(t, &a.p, g.queue.nudge(), "a's caller is woken, with the door")
	f.r.Enter("g", &c.p, c, f.now)
	require.Equal(t, Rejected, walk(t, c), "l holds g's permit")
	assert.Nil(t, g.queue.nudge(), "a's caller holds the door still")
	w, _ := g.queue.pass()
	assert.Same(t, &b.p, w, "a's caller passes the door on to b's, first in line")
	require.True(t, c.p.Leave(), "c's caller gives up, still in line")
	for _, k := range []*tk{a, b, c} {
		k.p.Unblock()
		k.p.Exit()
	}
	f.end(t, l)
	f.requireQuietKeys(t, "g")
}

// A woken caller turned away at another queue waits there, and passes on
// the door of the queue it was woken from: else no caller of that queue
// would be woken again. a, woken from g's queue, is turned away at the
// global queue, full meanwhile, and b's caller is woken in its place.
func TestAWokenCallerThatBlocksOnAnotherQueuePassesItsDoorOn(t *testing.T) {
	f := newQueuedFixture(t, 2, 0, false, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 0, Weight: 1}))
	woken := wakes(f)
	l, out := f.submit(t, "g", "l")
	require.Equal(t, Admitted, out)
	a, b := &tk{name: "a"}, &tk{name: "b"}
	for _, k := range []*tk{a, b} {
		f.r.Enter("g", &k.p, k, f.now)
		require.Equal(t, Rejected, walk(t, k), "l holds g's permit")
	}
	m, out := f.submit(t, "h", "m")
	require.Equal(t, Admitted, out, "m takes the last global permit")
	g, _ := f.r.Lookup("g")
	f.gl.handSlots(g.queue.nudge(), 0)
	require.Equal(t, 1, *woken, "a's caller is woken, with g's door")
	a.p.Unblock()
	require.Equal(t, Rejected, walk(t, a), "the global cap is full")
	assert.Equal(t, 2, *woken, "a's caller passes g's door on to b's")
	for _, k := range []*tk{l, m} {
		f.end(t, k)
	}
	for _, k := range []*tk{a, b} {
		k.p.Unblock()
		k.p.Leave()
		k.p.Exit()
	}
	f.requireQuietKeys(t, "g", "h")
}

// TestAQuietReleaseHandsTheDoorToTheCallerItWakes: a caller woken by a
// quiet release holds its queue's door, as one nudged does. So a nudge
// meanwhile wakes nobody else: callers woken together still walk one at
// a time, in their order.
func TestAQuietReleaseHandsTheDoorToTheCallerItWakes(t *testing.T) {
	f := newFixture(t, 2, false, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 0, Weight: 1}))
	a, b := &tk{name: "a"}, &tk{name: "b"}
	for _, k := range []*tk{a, b} {
		f.r.Enter("g", &k.p, k, f.now)
	}
	g, _ := f.r.Lookup("g")
	for _, k := range []*tk{a, b} {
		k.p.turnedAway(heldConc)
		acquired, retry, _ := g.queue.block(&k.p, g.queue.nudges(), false, false)
		require.False(t, acquired || retry, "%s's caller waits", k.name)
	}
	require.Same(t, &a.p, g.queue.quiet(heldConc), "a's caller is woken")
	assert.Nil(t, g.queue.nudge(), "a's caller holds the door")
	w, slot := g.queue.pass()
	require.Same(t, &b.p, w, "a's caller passes the door on to b's")
	assert.False(t, slot)
	w, _ = g.queue.pass()
	assert.Nil(t, w)
	for _, k := range []*tk{a, b} {
		k.p.Exit()
	}
}
