package groupstate

// A caller blocked on a queue of no slots is woken only by a nudge (see
// slots.nudge). These tests give back a permit its task may start on in
// each way other than a task's end, and check that the caller is woken.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wakes counts the callers woken through f's global.
func wakes(f *fixture) *int {
	n := new(int)
	f.gl.SetHooks(func(*tk) { *n++ }, func(*tk) {}, func(*tk) bool { return false })
	return n
}

// withExts makes f's tasks of groups with a parent get an Ext, and returns
// what enters a task of key, as the executor does.
func withExts(f *fixture) func(key, name string) *tk {
	exts := map[*tk]*Ext{}
	f.gl.SetExt(func(k *tk) *Ext { return exts[k] })
	return func(key, name string) *tk {
		k := &tk{name: name}
		f.r.Enter(key, &k.p, k, f.now)
		if k.p.NeedsExt(1) {
			exts[k] = new(Ext)
			k.p.Extend(exts[k], 1)
		}
		return k
	}
}

// walk walks k for its blocked caller, as Block does, and blocks the
// caller if the walk is turned away. It returns the walk's outcome. A
// caller woken calls it again, after Unblock.
func walk(t *testing.T, k *tk) Outcome {
	t.Helper()
	k.p.Pause(true)
	group, global := k.p.Nudges()
	out, reason := k.p.Try()
	if out == Rejected {
		seen := group
		if reason == ReasonGlobalQueueFull {
			seen = global
		}
		require.True(t, k.p.Block(reason, seen), "%s's caller waits", k.name)
	}
	return out
}

// TestTurnGivenUpWakesACallerTurnedAwayForIt: w of t/b, handed a global
// permit by a raised cap, walks on holding t/b's turn. Meanwhile a blocked
// caller's walk c of t/b finds t/b's bulkhead free, but waits for the turn
// there. t/b's queue has no slots, so c is turned away, and its caller
// blocks. w is then turned away at t's full bulkhead. c must be woken as
// w gives up its turn: no release of t/b's is to come, and c may yet
// start once t's bulkhead frees.
func TestTurnGivenUpWakesACallerTurnedAwayForIt(t *testing.T) {
	lim := fixed(Limits{Concurrency: Unlimited, MaxInFlight: 1, QueueThreshold: 0, Weight: 1})
	f := newFixture(t, 1, false, lim)
	f.r.SetParents(slashParents, nil)
	enter, woken := withExts(f), wakes(f)
	z := enter("t", "z")
	out, _ := z.p.Try()
	require.Equal(t, Admitted, out, "z holds the global permit and t's bulkhead")
	w := enter("t/b", "w")
	out, _ = w.p.Try()
	require.Equal(t, MustWait, out, "w waits for the global permit")
	hs := f.r.Update(Unlimited, Unlimited, lim).Handed
	require.Equal(t, []*tk{w}, hs, "the raised cap hands w its permit, and t/b's turn")

	c := enter("t/b", "c")
	require.Equal(t, Rejected, walk(t, c), "c waits for t/b's turn, with no slot to wait on")
	out, _, next, _ := w.p.Resume()
	require.Equal(t, Rejected, out, "t's bulkhead is full, and t's queue has no slots")
	require.Nil(t, next)
	w.p.Exit()
	require.Equal(t, 1, *woken, "c's caller is woken once w's walk gave up t/b's turn")

	c.p.Unblock()
	require.Equal(t, Rejected, walk(t, c), "c waits for t's bulkhead now")
	assert.Empty(t, f.end(t, z))
	require.Equal(t, 2, *woken, "z's end wakes c's caller")
	c.p.Unblock()
	require.Equal(t, Admitted, walk(t, c))
	c.p.Pause(false)
	assert.Empty(t, f.end(t, c))
	g, _ := f.r.Lookup("t/b")
	requireQuiet(t, f.gl, g)
}

// TestTurnEndedWakesACallerTurnedAwayForIt: w of g, handed a global
// permit by a raised cap, walks on holding g's turn. A blocked caller's
// walk c of g finds g's concurrency permit free, but waits for the turn
// there, with no slot to wait on: its caller blocks. (g has a child, whose
// tasks take g's permits too, so c takes none beside w: see yields.) w
// starts, and gives nothing back. c's caller must be woken as w's turn
// ends: c may start now, on g's second permit.
func TestTurnEndedWakesACallerTurnedAwayForIt(t *testing.T) {
	lim := fixed(Limits{Concurrency: 2, MaxInFlight: Unlimited, QueueThreshold: 0, Weight: 1})
	f := newFixture(t, 1, false, lim)
	f.r.SetParents(slashParents, nil)
	woken := wakes(f)
	withExts(f)("g/k", "k").p.Exit() // g has a child
	z, out := f.submit(t, "x", "z")
	require.Equal(t, Admitted, out, "z holds the global permit")
	w, out := f.submit(t, "g", "w")
	require.Equal(t, MustWait, out, "w waits for the global permit")
	require.Equal(t, []*tk{w}, f.r.Update(3, Unlimited, lim).Handed, "the raised cap hands w its permit, and g's turn")

	c := &tk{name: "c"}
	f.r.Enter("g", &c.p, c, f.now)
	require.Equal(t, Rejected, walk(t, c), "c waits for g's turn, with no slot to wait on")
	out, _, next, _ := w.p.Resume()
	require.Equal(t, Admitted, out)
	require.Nil(t, next)
	require.Equal(t, 1, *woken, "c's caller is woken once w's turn ended")
	c.p.Unblock()
	require.Equal(t, Admitted, walk(t, c))
	c.p.Pause(false)
	for _, k := range []*tk{z, w, c} {
		assert.Empty(t, f.end(t, k))
	}
	f.requireQuietKeys(t, "x", "g", "g/k")
}

// TestAWalkOnTurnedAwayHandsItsPermitOn: w of g, handed the global permit
// z gave back, is turned away at g's full concurrency limit. z's end woke
// c's caller, blocked on the global queue of no slots, but c's walk found
// the permit w's. The global permit w gives back was handed, not free as
// it walked. So its release wakes c's caller again, and c's task starts
// at once, long before y of g ends.
func TestAWalkOnTurnedAwayHandsItsPermitOn(t *testing.T) {
	lim := fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 0, Weight: 1})
	f := newFixture(t, 2, false, lim)
	woken := wakes(f)
	z, out := f.submit(t, "z", "z")
	require.Equal(t, Admitted, out)
	y, out := f.submit(t, "g", "y")
	require.Equal(t, Admitted, out, "y holds the other global permit, and g's")
	w, out := f.submit(t, "g", "w")
	require.Equal(t, MustWait, out, "w waits for a global permit")
	f.r.Update(2, 0, lim) // the global queue has no slots now; w waits on

	c := &tk{name: "c"}
	f.r.Enter("h", &c.p, c, f.now)
	require.Equal(t, Rejected, walk(t, c), "the global queue is full")
	z.p.Release()
	z.p.Exit()
	require.Same(t, w, z.p.Handed(), "w has z's global permit")
	require.Equal(t, 1, *woken, "z's end wakes c's caller")
	c.p.Unblock()
	require.Equal(t, Rejected, walk(t, c), "w holds the permit")
	out, _, _, _ = w.p.Resume()
	require.Equal(t, Rejected, out, "g's limit is full, and g's queue has no slots")
	w.p.Exit()
	require.Equal(t, 2, *woken, "c's caller is woken as w gives the permit back")
	c.p.Unblock()
	require.Equal(t, Admitted, walk(t, c))
	c.p.Pause(false)
	assert.Empty(t, f.end(t, c))
	assert.Empty(t, f.end(t, y))
	g, _ := f.r.Lookup("g")
	requireQuiet(t, f.gl, g)
}

// TestADoorPassedOnAQueueOfNoSlotsNudges: c1's caller is handed the
// global queue's slot w gave back, with its door. As it holds the door,
// the queue's threshold falls to 0, and a raised cap frees permits: the
// nudge that brings wakes nobody, as the door is held. c1's walk is then
// turned away at its own group's limit. Its door must pass the nudge on
// to c2's caller, whose task may start now.
func TestADoorPassedOnAQueueOfNoSlotsNudges(t *testing.T) {
	lim := fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 0, Weight: 1})
	f := newFixture(t, 2, false, lim)
	f.r.Update(2, 1, lim)
	woken := wakes(f)
	z, _ := f.submit(t, "z", "z")
	y, out := f.submit(t, "a", "y")
	require.Equal(t, Admitted, out, "z and y hold both global permits, and y a's")
	w, out := f.submit(t, "g", "w")
	require.Equal(t, MustWait, out, "w waits for a global permit, on the global queue's one slot")
	c1, c2 := &tk{name: "c1"}, &tk{name: "c2"}
	f.r.Enter("a", &c1.p, c1, f.now)
	f.r.Enter("b", &c2.p, c2, f.now)
	require.Equal(t, Rejected, walk(t, c1), "the global queue is full")
	require.Equal(t, Rejected, walk(t, c2), "the global queue is full")
	require.True(t, w.p.Leave())
	w.p.Release()
	w.p.Exit()
	require.Equal(t, 1, *woken, "c1's caller is handed w's slot, and the door")
	f.r.Update(Unlimited, 0, lim)
	require.Equal(t, 1, *woken, "the door is held: the raise wakes nobody")
	c1.p.Unblock()
	out, _ = c1.p.Try()
	require.Equal(t, Rejected, out, "a's limit is y's, and a's queue has no slots")
	require.Equal(t, 2, *woken, "c1's door passes the nudge on to c2's caller")
	c2.p.Unblock()
	require.Equal(t, Admitted, walk(t, c2))
	c1.p.Exit()
	for _, k := range []*tk{c2, y, z} {
		k.p.Pause(false)
		assert.Empty(t, f.end(t, k))
	}
	g, _ := f.r.Lookup("a")
	requireQuiet(t, f.gl, g)
}

// TestADoorHolderNudgedAsItWalksWalksAgain: z's end wakes c1's caller,
// with the global queue's door, but x takes the permit first. c1's walk
// is turned away. y ends before c1's caller blocks again, and its nudge
// finds the door held, so it wakes nobody. c1's caller must walk again
// then, not wait behind c2 with y's permit free.
func TestADoorHolderNudgedAsItWalksWalksAgain(t *testing.T) {
	lim := fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 0, Weight: 1})
	f := newFixture(t, 2, false, lim)
	f.r.Update(2, 0, lim)
	woken := wakes(f)
	z, _ := f.submit(t, "z", "z")
	y, out := f.submit(t, "y", "y")
	require.Equal(t, Admitted, out, "z and y hold both global permits")
	c1, c2 := &tk{name: "c1"}, &tk{name: "c2"}
	f.r.Enter("a", &c1.p, c1, f.now)
	f.r.Enter("b", &c2.p, c2, f.now)
	require.Equal(t, Rejected, walk(t, c1), "the global queue has no slots")
	require.Equal(t, Rejected, walk(t, c2), "the global queue has no slots")
	assert.Empty(t, f.end(t, z))
	require.Equal(t, 1, *woken, "z's end wakes c1's caller, with the door")
	x, out := f.submit(t, "x", "x")
	require.Equal(t, Admitted, out, "x takes z's permit")

	c1.p.Unblock()
	_, seen := c1.p.Nudges()
	out, reason := c1.p.Try()
	require.Equal(t, Rejected, out)
	assert.Empty(t, f.end(t, y))
	require.Equal(t, 1, *woken, "the door is held: y's end wakes nobody")
	require.False(t, c1.p.Block(reason, seen), "y's permit came free since c1's walk")
	require.Equal(t, Admitted, walk(t, c1))
	for _, k := range []*tk{c1, x} {
		k.p.Pause(false)
		assert.Empty(t, f.end(t, k))
	}
	require.Equal(t, 2, *woken, "c1's door passes to c2's caller")
	c2.p.Unblock()
	require.Equal(t, Admitted, walk(t, c2))
	c2.p.Pause(false)
	assert.Empty(t, f.end(t, c2))
	requireQuiet(t, f.gl)
}

// capOfOneHeld readies a fixture of one global permit, which z holds, and
// a global queue of no slots, with groups of limits lim. c is entered, for
// its blocked caller to walk.
func capOfOneHeld(t *testing.T) (f *fixture, lim func(string) Limits, woken *int, z, c *tk) {
	t.Helper()
	lim = fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 0, Weight: 1})
	f = newFixture(t, 1, false, lim)
	f.r.Update(1, 0, lim)
	woken = wakes(f)
	z, out := f.submit(t, "z", "z")
	require.Equal(t, Admitted, out)
	c = &tk{name: "c"}
	f.r.Enter("c", &c.p, c, f.now)
	return f, lim, woken, z, c
}

// TestACallerNudgedBeforeItBlocksWalksAgain: c's walk finds the global
// permit z's, and the global queue of no slots. z ends before c's caller
// blocks: its nudge finds no caller waiting. c's caller must walk again
// then, and not wait for a nudge that came already.
func TestACallerNudgedBeforeItBlocksWalksAgain(t *testing.T) {
	f, _, woken, z, c := capOfOneHeld(t)
	c.p.Pause(true)
	_, seen := c.p.Nudges()
	out, reason := c.p.Try()
	require.Equal(t, Rejected, out, "the global queue has no slots")
	assert.Empty(t, f.end(t, z))
	require.False(t, c.p.Block(reason, seen), "z's permit came free since c's walk")
	assert.Zero(t, *woken)
	require.Equal(t, Admitted, walk(t, c))
	c.p.Pause(false)
	assert.Empty(t, f.end(t, c))
	requireQuiet(t, f.gl)
}

// TestARaisedCapWakesACallerBlockedOnTheGlobalQueue: c's caller blocks on
// the global queue of no slots while z holds the only global permit. A
// raised cap frees a permit c's task may start on, so it must wake c's
// caller: no task's end is to come.
func TestARaisedCapWakesACallerBlockedOnTheGlobalQueue(t *testing.T) {
	f, lim, woken, z, c := capOfOneHeld(t)
	require.Equal(t, Rejected, walk(t, c), "the global queue has no slots")
	require.Empty(t, f.r.Update(2, 0, lim).Handed)
	require.Equal(t, 1, *woken, "the raised cap wakes c's caller")
	c.p.Unblock()
	require.Equal(t, Admitted, walk(t, c))
	for _, k := range []*tk{c, z} {
		k.p.Pause(false)
		assert.Empty(t, f.end(t, k))
	}
	requireQuiet(t, f.gl)
}
