package groupstate

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pausable returns limits of concurrency 1 and bulkhead bulk, with the
// groups of keys paused while *paused.
func pausable(paused *bool, bulk int, keys ...string) func(string) Limits {
	return func(key string) Limits {
		return Limits{Concurrency: 1, MaxInFlight: bulk, QueueThreshold: Unlimited, Weight: 1, Paused: *paused && slices.Contains(keys, key)}
	}
}

// pausableTree is a fixture under pausable's limits whose keys "p/x" have
// the parent "p", and those limits.
func pausableTree(t *testing.T, fair bool, paused *bool, bulk int, keys ...string) (*fixture, func(string) Limits) {
	limits := pausable(paused, bulk, keys...)
	f := newFixture(t, Unlimited, fair, limits)
	f.r.SetParents(slashParents, nil)
	return f, limits
}

// TestResumeMovesATaskThatReachedALineWhilePaused: w of g waits at g's
// concurrency layer, reached while g was paused (pausedAsItWalks). The
// resume must not
// hand w g's permit ahead of older, which the pause sent to the pause
// line: it moves w there too, before it raises the limit, and the drain
// walks them in the order they were submitted.
func TestResumeMovesATaskThatReachedALineWhilePaused(t *testing.T) {
	paused := false
	limits := pausable(&paused, Unlimited, "g")
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
// The pause of g's parent moves it too, as it does its subtree's tasks.
func TestPauseMovesAFreshWalkWaitingForItsTurn(t *testing.T) {
	for _, c := range []struct{ key, paused string }{{"g", "g"}, {"p/g", "p"}} {
		paused := false
		f, limits := pausableTree(t, false, &paused, 1, c.paused)
		submit := f.stepping(t)
		x := submit(c.key, "x", Admitted)
		h := submit(c.key, "h", MustWait) // waits for the bulkhead
		x.p.Release()
		x.p.Exit()
		require.Equal(t, h, x.p.Handed())
		fresh := submit(c.key, "f", MustWait) // waits for the turn

		paused = true
		f.r.Update(Unlimited, Unlimited, limits)
		out, _, next, _ := h.p.Resume()
		assert.Equal(t, MustWait, out, "h waits at %s's concurrency layer", c.paused)
		assert.Nil(t, next, "f walks on from its turn, though %s is paused", c.paused)

		paused = false
		f.r.Update(Unlimited, Unlimited, limits)
		pg, _ := f.r.Lookup(c.paused)
		assert.Equal(t, []string{"h", "f"}, drain(pg))
		for _, k := range []*tk{h, fresh} {
			k.p.Release()
			k.p.Exit()
		}
		f.requireQuietKeys(t, c.key, c.paused)
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
	limits := pausable(&paused, Unlimited, "g")
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
