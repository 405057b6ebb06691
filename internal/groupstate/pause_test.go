package groupstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReparkMovesATaskThatWaitsInAPausedGroupsLine: under IsolationOff w
// of g is handed the global permit, and g is paused before w walks on. w
// then waits at g's concurrency layer, whose limit is 0 while paused,
// holding the global permit. Repark moves it to the pause line, among
// the tasks there in the order they were submitted, and gives the permit
// back: b of another group, waiting for it, is handed it.
func TestReparkMovesATaskThatWaitsInAPausedGroupsLine(t *testing.T) {
	paused := false
	limits := pausable(&paused, Unlimited, "g")
	f, older, w := pausedAsItWalks(t, &paused, limits)
	younger, out := f.submit(t, "g", "younger")
	require.Equal(t, MustWait, out)
	b, out := f.submit(t, "b", "b")
	require.Equal(t, MustWait, out, "w holds the global permit")

	g, _ := f.r.Lookup("g")
	c := f.r.Repark(g)
	assert.Equal(t, []*tk{b}, c.Handed, "a paused group holds back another")
	assert.Equal(t, []string{"b"}, resume(c.Handed))

	paused = false
	c = f.r.Update(1, Unlimited, limits)
	require.Equal(t, []*Group[tk]{g}, c.Resumed)
	assert.Equal(t, []string{"older", "w", "younger"}, drain(g), "the pause line's order")
	for _, k := range []*tk{b, older, w, younger} {
		k.p.Release()
		k.p.Exit()
	}
}

// pausedAsItWalks readies, under IsolationOff with a global limit of 1, a
// task w of group g that walked as g was paused. w is handed the global
// permit, and g is paused before w walks on. w then waits at g's
// concurrency layer, whose limit is 0 while paused, holding the global
// permit. older, of g, submitted before w, waits in the pause line.
func pausedAsItWalks(t *testing.T, paused *bool, limits func(string) Limits) (f *fixture, older, w *tk) {
	t.Helper()
	f = newFixture(t, 1, false, limits)
	older = &tk{name: "older"}
	f.r.Enter("g", &older.p, older, 0) // submitted first, walks after the pause
	f.now = 1
	x, out := f.submit(t, "x", "x")
	require.Equal(t, Admitted, out)
	w, out = f.submit(t, "g", "w")
	require.Equal(t, MustWait, out, "w waits for the global permit")
	x.p.Release()
	x.p.Exit()
	require.Equal(t, w, x.p.Handed())

	*paused = true
	f.r.Update(1, Unlimited, limits)
	f.now = 2
	out, _ = older.p.Try()
	require.Equal(t, MustWait, out, "older waits in the pause line")
	out, _, _, _ = w.p.Resume()
	require.Equal(t, MustWait, out, "w waits at g's concurrency layer")
	return f, older, w
}

// drain takes every task out of resumed g's pause line, and returns their
// names in order. It walks none on.
func drain(g *Group[tk]) []string {
	var names []string
	if g.StartDrain() == 0 {
		return nil
	}
	for k := g.Unpark(); k != nil; k = g.Unpark() {
		names = append(names, k.name)
	}
	return names
}

// TestResumedGroupsNewTaskWaitsBehindItsPauseLine: p1 and p2 wait in
// paused g's pause line, and g is resumed. f, submitted before the caller
// that resumed g walks them on, must not start ahead of them: it waits in
// the pause line behind them, and joins g's line behind p2.
func TestResumedGroupsNewTaskWaitsBehindItsPauseLine(t *testing.T) {
	paused := true
	limits := func(string) Limits {
		return Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1, Paused: paused}
	}
	for _, fair := range []bool{false, true} {
		f := newFixture(t, Unlimited, fair, limits)
		p1, out := f.submit(t, "g", "p1")
		require.Equal(t, MustWait, out)
		p2, _ := f.submit(t, "g", "p2")
		paused = false
		c := f.r.Update(Unlimited, Unlimited, limits)
		g, _ := f.r.Lookup("g")
		require.Equal(t, []*Group[tk]{g}, c.Resumed)

		fresh, out := f.submit(t, "g", "f")
		require.Equal(t, MustWait, out, "f started ahead of p1 and p2")
		assert.Equal(t, 3, g.StartDrain())
		assert.Zero(t, g.StartDrain(), "one caller drains")
		var admitted []string
		for k := g.Unpark(); k != nil; k = g.Unpark() {
			if out, _, _, _ := k.p.Resume(); out == Admitted {
				admitted = append(admitted, k.name)
			}
		}
		assert.Equal(t, []string{"p1"}, admitted)
		assert.Equal(t, []string{"p2"}, f.end(t, p1))
		assert.Equal(t, []string{"f"}, f.end(t, p2))
		f.end(t, fresh)
		requireQuiet(t, f.gl, g)
		paused = true
	}
}

// TestChildsPauseTakesItsTaskOutOfItsParentsLine: w of p/c holds p/c's
// permit and waits at p's layer, whose permit a of p/d holds. p/c's pause
// moves w to p/c's pause line and gives p/c's permit back. a's end hands
// w nothing: it must not start while p/c is paused.
func TestChildsPauseTakesItsTaskOutOfItsParentsLine(t *testing.T) {
	for _, fair := range []bool{false, true} {
		paused := false
		f, limits := pausableTree(t, fair, &paused, Unlimited, "p/c")
		submit := f.stepping(t)
		a := submit("p/d", "a", Admitted)
		w := submit("p/c", "w", MustWait)
		cg, _ := f.r.Lookup("p/c")
		_, conc, _ := cg.Held()
		require.Equal(t, 1, conc, "w holds p/c's permit")

		paused = true
		f.r.Update(Unlimited, Unlimited, limits)
		_, conc, _ = cg.Held()
		assert.Zero(t, conc, "w gave p/c's permit back")
		assert.Same(t, cg.pauseLine.Load(), w.p.line.Load(), "w waits in p/c's pause line")
		assert.Empty(t, f.end(t, a), "w started while p/c is paused, fair %v", fair)

		paused = false
		f.r.Update(Unlimited, Unlimited, limits)
		assert.Equal(t, []string{"w"}, drain(cg))
		assert.Equal(t, []string{"w"}, resume([]*tk{w}))
		assert.Empty(t, f.end(t, w))
		f.requireQuietKeys(t, "p", "p/c", "p/d")
	}
}

// TestAChildsOldestWaitCountsItsTaskInItsParentsPauseLine: w of p/c waits
// in paused p's pause line. p/c's oldest wait is w's. p has no task of
// its own (its stats add its subtree's).
func TestAChildsOldestWaitCountsItsTaskInItsParentsPauseLine(t *testing.T) {
	for _, fair := range []bool{false, true} {
		paused := true
		f, limits := pausableTree(t, fair, &paused, Unlimited, "p")
		w := f.stepping(t)("p/c", "w", MustWait)
		pg, _ := f.r.Lookup("p")
		cg, _ := f.r.Lookup("p/c")
		require.Same(t, pg.pauseLine.Load(), w.p.line.Load(), "w waits in p's pause line")
		assert.EqualValues(t, 10, cg.OldestWait(10), "p/c, fair %v", fair)
		assert.Zero(t, pg.OldestWait(10), "p, fair %v", fair)

		paused = false
		f.r.Update(Unlimited, Unlimited, limits)
		assert.Equal(t, []string{"w"}, drain(pg))
		assert.Equal(t, []string{"w"}, resume([]*tk{w}))
		assert.Zero(t, cg.OldestWait(10))
		assert.Empty(t, f.end(t, w))
		f.requireQuietKeys(t, "p", "p/c")
	}
}
