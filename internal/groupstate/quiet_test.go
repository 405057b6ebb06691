package groupstate

// A blocked caller's walk turned away gives back quietly (see quiet.go).
// These tests turn a caller away at a permit such a walk holds for a
// moment, and check that the quiet release wakes it, and only it.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// turnAwayInside walks a for its blocked caller, and walks b as a's walk,
// turned away, is about to give back what it took. Both must be turned
// away, b at a permit a holds for that moment. why and whyB say why.
func turnAwayInside(t *testing.T, a, b *tk, why, whyB string) {
	t.Helper()
	testHookTurnedAway = func() {
		testHookTurnedAway = nil
		require.Equal(t, Rejected, walk(t, b), whyB)
	}
	t.Cleanup(func() { testHookTurnedAway = nil })
	require.Equal(t, Rejected, walk(t, a), why)
}

// endThenBoth ends l, whose end must wake the caller of a or of b, both
// blocked for l's permits, and then has those callers walk, each woken by
// the end of the one before. woken counts the wakes so far, n before l's
// end.
func endThenBoth(t *testing.T, f *fixture, woken *int, n int, l, a, b *tk) {
	t.Helper()
	f.end(t, l)
	require.Equal(t, n+1, *woken, "l's end wakes one caller")
	if a.p.line.Load() != nil {
		a, b = b, a
	}
	for i, k := range []*tk{a, b} {
		require.Equal(t, n+1+i, *woken, "%s's caller was woken", k.name)
		k.p.Unblock()
		require.Equal(t, Admitted, walk(t, k))
		k.p.Pause(false)
		f.end(t, k)
	}
	require.Equal(t, n+2, *woken)
}

// TestAQuietReleaseWakesTheCallerTurnedAwayAtItsPermit: y's caller walks
// for g, takes the last global permit and is turned away at g's limit,
// which l holds. Meanwhile c's walk for h finds the global cap full, and
// c's caller blocks on the global queue of no slots. y gives the global
// permit back quietly. That must wake c's caller: no other release is to
// come while l runs. y's caller, blocked on g's queue, is not woken.
func TestAQuietReleaseWakesTheCallerTurnedAwayAtItsPermit(t *testing.T) {
	lim := fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 0, Weight: 1})
	f := newFixture(t, 2, false, lim)
	f.r.Update(2, 0, lim)
	woken := wakes(f)
	l, out := f.submit(t, "g", "l")
	require.Equal(t, Admitted, out)
	y, c := &tk{name: "y"}, &tk{name: "c"}
	f.r.Enter("g", &y.p, y, f.now)
	f.r.Enter("h", &c.p, c, f.now)
	turnAwayInside(t, y, c, "g's limit is l's", "the last global permit is y's for now")
	assert.Equal(t, 1, *woken, "y's walk gives the global permit back: c's caller is woken")
	c.p.Unblock()
	require.Equal(t, Admitted, walk(t, c))
	for _, k := range []*tk{c, l} {
		k.p.Pause(false)
		f.end(t, k)
	}
	assert.Equal(t, 2, *woken, "l's end wakes y's caller")
	y.p.Unblock()
	require.Equal(t, Admitted, walk(t, y))
	y.p.Pause(false)
	f.end(t, y)
	g, _ := f.r.Lookup("g")
	h, _ := f.r.Lookup("h")
	requireQuiet(t, f.gl, g, h)
}

// TestAQuietReleaseWakesACallerOfItsOwnGroup, under fair share: y's caller
// takes g's permit, and is turned away at the global cap, which l holds.
// Meanwhile c's walk for g finds g's limit full, and c's caller blocks on
// g's queue of no slots. y gives g's permit back quietly, which must wake
// c's caller. c's walk is then turned away at the cap too, and wakes no
// one: both wait for l, and wake each other no more.
func TestAQuietReleaseWakesACallerOfItsOwnGroup(t *testing.T) {
	f, woken, l, y, c := callersOfOneGroup(t)
	turnAwayInside(t, y, c, "the cap is l's", "g's permit is y's for now")
	assert.Equal(t, 1, *woken, "y's walk gives g's permit back: c's caller is woken")
	c.p.Unblock()
	require.Equal(t, Rejected, walk(t, c), "the cap is l's")
	assert.Equal(t, 1, *woken, "c's walk gives g's permit back, but y's caller waits for the cap")
	endWatchedThenBoth(t, f, woken, 1, l, y, c)
}

// callersOfOneGroup readies, under fair share with a cap of 1 that l of z
// holds, y and c of g, entered, for their blocked callers to walk. g's
// limit is 1, and its queue has no slots.
func callersOfOneGroup(t *testing.T) (f *fixture, woken *int, l, y, c *tk) {
	t.Helper()
	lim := fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 0, Weight: 1})
	f = newFixture(t, 1, true, lim)
	woken = wakes(f)
	l, out := f.submit(t, "z", "l")
	require.Equal(t, Admitted, out)
	y, c = &tk{name: "y"}, &tk{name: "c"}
	f.r.Enter("g", &y.p, y, f.now)
	f.r.Enter("g", &c.p, c, f.now)
	return f, woken, l, y, c
}

// endWatchedThenBoth is endThenBoth for y and c of callersOfOneGroup, both
// waiting for the cap: their callers watch it (WatchGlobal) meanwhile.
// Then g is quiet.
func endWatchedThenBoth(t *testing.T, f *fixture, woken *int, n int, l, y, c *tk) {
	t.Helper()
	yw, _ := y.p.WatchGlobal()
	cw, _ := c.p.WatchGlobal()
	endThenBoth(t, f, woken, n, l, y, c)
	yw.Stop()
	cw.Stop()
	g, _ := f.r.Lookup("g")
	requireQuiet(t, f.gl, g)
}

// TestAQuietReleaseWhileTheDoorIsHeldWakesAsItPasses: h's caller, woken
// with the door of g's queue of no slots, walks again: it takes g's
// bulkhead and is turned away at g's limit, which l holds. Meanwhile x's
// walk finds the bulkhead full, and x's caller waits behind the door. h
// gives the bulkhead back quietly while it holds the door, and then waits
// again. As it gives the door back, x's caller must be woken. Then x's
// walk is turned away at g's limit too, and wakes no one.
func TestAQuietReleaseWhileTheDoorIsHeldWakesAsItPasses(t *testing.T) {
	lim := fixed(Limits{Concurrency: 1, MaxInFlight: 2, QueueThreshold: 0, Weight: 1})
	f := newFixture(t, Unlimited, false, lim)
	woken := wakes(f)
	l, out := f.submit(t, "g", "l")
	require.Equal(t, Admitted, out)
	h, x := &tk{name: "h"}, &tk{name: "x"}
	f.r.Enter("g", &h.p, h, f.now)
	f.r.Enter("g", &x.p, x, f.now)
	require.Equal(t, Rejected, walk(t, h), "g's limit is l's")
	f.r.Update(Unlimited, Unlimited, lim)
	require.Equal(t, 1, *woken, "a change of limits wakes h's caller, with the door")
	h.p.Unblock()
	turnAwayInside(t, h, x, "g's limit is l's", "g's bulkhead is l's and h's")
	assert.Equal(t, 2, *woken, "h gives the door back: x's caller is woken")
	g, _ := f.r.Lookup("g")
	assert.Zero(t, g.queue.freed.Load()>>pendingShift&pendingBits, "the release is no longer pending")
	x.p.Unblock()
	require.Equal(t, Rejected, walk(t, x), "g's limit is l's")
	assert.Equal(t, 2, *woken, "x's walk wakes no one: both wait for l")
	endThenBoth(t, f, woken, 2, l, h, x)
	requireQuiet(t, f.gl, g)
}

// TestAQuietReleaseWakesACallerOfAChild: y's caller walks for t/b, takes
// t/b's permit and is turned away at t's limit, which l of t/a holds.
// Meanwhile c's walk for t/b finds t/b's limit full, and c's caller blocks
// on t/b's queue of no slots. y gives t/b's permit back quietly, which
// must wake c's caller.
func TestAQuietReleaseWakesACallerOfAChild(t *testing.T) {
	lim := fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 0, Weight: 1})
	f := newFixture(t, Unlimited, false, lim)
	f.r.SetParents(slashParents, nil)
	enter, woken := withExts(f), wakes(f)
	l := enter("t/a", "l")
	out, _ := l.p.Try()
	require.Equal(t, Admitted, out)
	y, c := enter("t/b", "y"), enter("t/b", "c")
	turnAwayInside(t, y, c, "t's limit is l's", "t/b's permit is y's for now")
	assert.Equal(t, 1, *woken, "y's walk gives t/b's permit back: c's caller is woken")
	c.p.Unblock()
	require.Equal(t, Rejected, walk(t, c), "t's limit is l's")
	assert.Equal(t, 1, *woken, "c's walk wakes no one: both wait for l")
	endThenBoth(t, f, woken, 1, l, y, c)
	g, _ := f.r.Lookup("t/b")
	requireQuiet(t, f.gl, g)
}

// TestAQuietReleaseBeforeTheCallerBlocksHasItWalkAgain: as in
// TestAQuietReleaseWakesACallerOfItsOwnGroup, but y gives g's permit back
// before c's caller blocks. c's caller must walk
// again at once, having seen the quiet release of its cause.
func TestAQuietReleaseBeforeTheCallerBlocksHasItWalkAgain(t *testing.T) {
	f, woken, l, y, c := callersOfOneGroup(t)
	var seen uint64
	var reason string
	testHookTurnedAway = func() {
		testHookTurnedAway = nil
		c.p.Pause(true)
		seen, _ = c.p.Nudges()
		var out Outcome
		out, reason = c.p.Try()
		require.Equal(t, Rejected, out, "g's permit is y's for now")
	}
	t.Cleanup(func() { testHookTurnedAway = nil })
	require.Equal(t, Rejected, walk(t, y), "the cap is l's")
	require.False(t, c.p.Block(reason, seen), "y gave g's permit back since c's walk")
	require.Equal(t, Rejected, walk(t, c), "the cap is l's")
	assert.Zero(t, *woken)
	endWatchedThenBoth(t, f, woken, 0, l, y, c)
}
