package groupstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pausable returns limits of concurrency 1 and bulkhead bulk, with group
// g paused while *paused.
func pausable(paused *bool, bulk int) func(string) Limits {
	return func(key string) Limits {
		return Limits{Concurrency: 1, MaxInFlight: bulk, QueueThreshold: Unlimited, Weight: 1, Paused: *paused && key == "g"}
	}
}

// TestResumeMovesATaskThatReachedALineWhilePaused: w of g waits at g's
// concurrency layer, reached while g was paused (pausedAsItWalks). The
// resume must not
// hand w g's permit ahead of older, which the pause sent to the pause
// line: it moves w there too, before it raises the limit, and the drain
// walks them in the order they were submitted.
func TestResumeMovesATaskThatReachedALineWhilePaused(t *testing.T) {
	paused := false
	limits := pausable(&paused, Unlimited)
	f, older, w := pausedAsItWalks(t, &paused, limits)

	paused = false
	c := f.r.Update(1, Unlimited, limits)
	g, _ := f.r.Lookup("g")
	assert.Empty(t, c.Handed, "w was handed g's permit ahead of older")
	require.Equal(t, []*Group[tk]{g}, c.Resumed)
	assert.Equal(t, []string{"older", "w"}, drain(g))
	for _, k := range []*tk{older, w} {
		k.p.Release()
		k.p.Exit()
	}
}

// TestPauseMovesAFreshWalkWaitingForItsTurn: h of g is handed g's
// bulkhead permit, so it has g's turn. f, a fresh walk, waits for the
// turn at that layer, in no line. A pause moves it to the pause line as
// it does the tasks waiting in lines. Left with the turn, it would walk
// on as h's walk stops, and start ahead of the tasks the pause sent back.
func TestPauseMovesAFreshWalkWaitingForItsTurn(t *testing.T) {
	paused := false
	limits := pausable(&paused, 1)
	f := newFixture(t, Unlimited, false, limits)
	x, out := f.submit(t, "g", "x")
	require.Equal(t, Admitted, out)
	h, out := f.submit(t, "g", "h")
	require.Equal(t, MustWait, out, "h waits for g's bulkhead")
	x.p.Release()
	x.p.Exit()
	require.Equal(t, h, x.p.Handed())
	fresh, out := f.submit(t, "g", "f")
	require.Equal(t, MustWait, out, "f waits for g's turn")

	paused = true
	f.r.Update(Unlimited, Unlimited, limits)
	out, _, next, _ := h.p.Resume()
	assert.Equal(t, MustWait, out, "h waits at g's concurrency layer")
	assert.Nil(t, next, "f walks on from its turn, though g is paused")

	paused = false
	f.r.Update(Unlimited, Unlimited, limits)
	g, _ := f.r.Lookup("g")
	assert.Equal(t, []string{"h", "f"}, drain(g))
	for _, k := range []*tk{h, fresh} {
		k.p.Release()
		k.p.Exit()
	}
}

// TestAHandedTaskSentBackHandsOnItsParentsPermit: under fair share w of
// p/a waits in p's line, and b of p/b behind it. w is handed p's permit,
// and p/a is paused before w walks on. So w holds p/a's permit over its
// limit of 0, and goes back as it walks on (sendBack). p's permit it gives
// back goes to b at once: no release of p's is to come.
func TestAHandedTaskSentBackHandsOnItsParentsPermit(t *testing.T) {
	paused := false
	limits := func(key string) Limits {
		n := 2
		if key == "p" {
			n = 1
		}
		return Limits{Concurrency: n, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1, Paused: paused && key == "p/a"}
	}
	f := newFixture(t, Unlimited, true, limits)
	f.r.SetParents(slashParents, nil)
	submit := f.stepping(t)
	x := submit("p/b", "x", Admitted)
	w := submit("p/a", "w", MustWait)
	b := submit("p/b", "b", MustWait)
	x.p.Release()
	x.p.Exit()
	require.Same(t, w, x.p.Handed(), "w is handed p's permit")
	require.Nil(t, x.p.Handed())

	paused = true
	require.Empty(t, f.r.Update(Unlimited, Unlimited, limits).Handed)
	out, _, next, moved := w.p.Resume()
	require.Equal(t, MustWait, out, "w goes back: p/a is paused")
	require.Nil(t, next)
	require.NotNil(t, moved)
	assert.Equal(t, []*tk{b}, moved.Handed, "b is handed p's permit w gave back")
	assert.Equal(t, []string{"b"}, resume(moved.Handed))
	assert.Empty(t, f.end(t, b))

	paused = false
	f.r.Update(Unlimited, Unlimited, limits)
	a, _ := f.r.Lookup("p/a")
	assert.Equal(t, []string{"w"}, drain(a))
	w.p.Release()
	w.p.Exit()
	pg, _ := f.r.Lookup("p")
	requireQuiet(t, f.gl, a, pg)
}

// TestATurnPassedAsItsGroupPausesHoldsNoGlobalPermitParked: f of g took a
// global permit and waits for w's turn. w's walk stops and passes the
// turn to f, whose caller owns it then, so the pause that comes next does
// not find it. f holds a permit: it is past the gate and walks on, to wait
// at g's concurrency layer, where Repark finds it and takes the permit
// back. Parked at once, f would hold the global permit while paused.
func TestATurnPassedAsItsGroupPausesHoldsNoGlobalPermitParked(t *testing.T) {
	paused := false
	limits := pausable(&paused, Unlimited)
	f := newFixture(t, 1, false, limits)
	submit := f.stepping(t)
	x := submit("x", "x", Admitted)
	w := submit("g", "w", MustWait)
	require.Equal(t, []*tk{w}, f.r.Update(3, Unlimited, limits).Handed)
	fresh := submit("g", "f", MustWait) // holds a global permit, waits for w's turn
	out, _, next, _ := w.p.Resume()
	require.Equal(t, Admitted, out)
	require.Same(t, fresh, next)

	paused = true
	f.r.Update(3, Unlimited, limits)
	out, reason, _, _ := fresh.p.Resume()
	require.Equal(t, MustWait, out)
	g, _ := f.r.Lookup("g")
	if reason != Parked { // as the executor does
		f.r.Repark(g)
	}
	held, _ := f.gl.Held()
	assert.Equal(t, 2, held, "x and w hold the global permits, f none")

	paused = false
	f.r.Update(3, Unlimited, limits)
	assert.Equal(t, []string{"f"}, drain(g))
	assert.Empty(t, resume([]*tk{fresh}), "f waits for g's permit w holds")
	assert.Equal(t, []string{"f"}, f.end(t, w))
	assert.Empty(t, f.end(t, fresh))
	assert.Empty(t, f.end(t, x))
	f.requireQuietKeys(t, "g", "x")
}

// TestParentsPauseMovesAChildsFreshWalkWaitingForItsTurn is
// TestPauseMovesAFreshWalkWaitingForItsTurn with the parent p of h's and
// f's group paused: the pause moves the fresh walks of p's subtree too.
func TestParentsPauseMovesAChildsFreshWalkWaitingForItsTurn(t *testing.T) {
	paused := false
	limits := func(key string) Limits {
		return Limits{Concurrency: 1, MaxInFlight: 1, QueueThreshold: Unlimited, Weight: 1, Paused: paused && key == "p"}
	}
	f := newFixture(t, Unlimited, false, limits)
	f.r.SetParents(slashParents, nil)
	submit := f.stepping(t)
	x := submit("p/c", "x", Admitted)
	h := submit("p/c", "h", MustWait) // waits for p/c's bulkhead
	x.p.Release()
	x.p.Exit()
	require.Equal(t, h, x.p.Handed())
	fresh := submit("p/c", "f", MustWait) // waits for p/c's turn

	paused = true
	f.r.Update(Unlimited, Unlimited, limits)
	out, _, next, _ := h.p.Resume()
	assert.Equal(t, MustWait, out, "h waits at p's concurrency layer")
	assert.Nil(t, next, "f walks on from its turn, though p is paused")

	paused = false
	f.r.Update(Unlimited, Unlimited, limits)
	pg, _ := f.r.Lookup("p")
	assert.Equal(t, []string{"h", "f"}, drain(pg))
	for _, k := range []*tk{h, fresh} {
		k.p.Release()
		k.p.Exit()
	}
	f.requireQuietKeys(t, "p", "p/c")
}
