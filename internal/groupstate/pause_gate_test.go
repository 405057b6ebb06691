package groupstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A walk joins a drained group's pause line in gate. Before it looks at the
// group again, the drainer takes it out (Unpark), walks it on to the
// group's concurrency line, and empties the pause line, which ends the
// drain. The walk then finds the group neither paused nor drained, and
// would leave the line it joined. The task is in the concurrency line now,
// which owns it. Taking it out from there handed b, behind it, the permit
// that b fits in. The walk went on, and the place it waited in took over
// the link that held b: b was lost, holding the group's turn, and every
// later walk of the group waited for that turn for good.
func TestGateLeavesOnlyThePauseLine(t *testing.T) {
	paused := false
	f := newFixture(t, Unlimited, false, func(string) Limits {
		return Limits{Concurrency: 2, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1, Paused: paused}
	})
	a, out := f.submit(t, "g", "a")
	require.Equal(t, Admitted, out, "a holds 1 of g's 2 permits")
	g, _ := f.r.Lookup("g")
	paused = true
	f.r.Update(Unlimited, Unlimited, f.r.resolve)
	paused = false
	c := f.r.Update(Unlimited, Unlimited, f.r.resolve)
	require.Equal(t, []*Group[tk]{g}, c.Resumed, "g is drained from now on")

	f.now = 1
	p := &tk{name: "p"}
	f.r.Enter("g", &p.p, p, f.now)
	x := new(Ext)
	f.gl.SetExt(func(*tk) *Ext { return x }) // only p is extended
	p.p.Extend(x, 2)                         // where costs differ, a leaving task hands on

	var b *tk
	testHookGateJoined = func() { // the drainer, as p's walk stops here
		testHookGateJoined = nil
		require.Equal(t, 1, g.StartDrain())
		require.Same(t, p, g.Unpark())
		out, _, next, _ := p.p.Resume()
		require.Equal(t, MustWait, out, "p needs 2 of g's permits, 1 is free")
		require.Nil(t, next)
		require.Nil(t, g.Unpark(), "the pause line is empty: the drain ends")
		f.now = 2
		b, out = f.submit(t, "g", "b")
		require.Equal(t, MustWait, out, "b waits behind p")
	}
	t.Cleanup(func() { testHookGateJoined = nil })
	out, _ = p.p.Try()

	assert.Equal(t, MustWait, out)
	assert.Same(t, &g.conc, p.p.line.Load(), "p waits in g's concurrency line, which owns it")
	assert.Same(t, &g.conc, b.p.line.Load(), "and b behind it")
	assert.Equal(t, []string{"p"}, f.end(t, a), "a's permit goes to p")
	assert.Equal(t, []string{"b"}, f.end(t, p))
	assert.Empty(t, f.end(t, b))
	requireQuiet(t, f.gl, g)
}

// TestUnparkedTaskWaitsBehindOlderTheNextPauseSentBack: o and p wait in
// paused g's pause line, and g is resumed. The drain walks o on to g's
// concurrency line, then takes p out. Before p walks, g is paused and
// resumed again. The pause sends o back to the pause line. p, older than
// none of the tasks there now, must wait behind o, not walk past it to
// g's line.
func TestUnparkedTaskWaitsBehindOlderTheNextPauseSentBack(t *testing.T) {
	for _, fair := range []bool{false, true} {
		paused := false
		limits := pausable(&paused, Unlimited, "g")
		f := newFixture(t, Unlimited, fair, limits)
		a, out := f.submit(t, "g", "a")
		require.Equal(t, Admitted, out, "a holds g's permit")
		g, _ := f.r.Lookup("g")
		paused = true
		f.r.Update(Unlimited, Unlimited, limits)
		f.now = 1
		o, out := f.submit(t, "g", "o")
		require.Equal(t, MustWait, out)
		f.now = 2
		p, out := f.submit(t, "g", "p")
		require.Equal(t, MustWait, out)

		paused = false
		f.r.Update(Unlimited, Unlimited, limits)
		require.Equal(t, 2, g.StartDrain())
		require.Same(t, o, g.Unpark())
		out, _, _, _ = o.p.Resume()
		require.Equal(t, MustWait, out, "o waits for a's permit")
		require.Same(t, p, g.Unpark(), "the drain takes p out, and p has yet to walk")

		paused = true
		f.r.Update(Unlimited, Unlimited, limits)
		paused = false
		f.r.Update(Unlimited, Unlimited, limits) // its drain is the one under way
		out, _, _, _ = p.p.Resume()
		assert.Equal(t, MustWait, out)
		assert.Same(t, g.pauseLine.Load(), p.p.line.Load(), "p waits behind o in the pause line")
		for k := g.Unpark(); k != nil; k = g.Unpark() { // the drain goes on
			out, _, _, _ = k.p.Resume()
			require.Equal(t, MustWait, out)
		}
		assert.Equal(t, []string{"o"}, f.end(t, a), "fair %v", fair)
		assert.Equal(t, []string{"p"}, f.end(t, o))
		assert.Empty(t, f.end(t, p))
		requireQuiet(t, f.gl, g)
	}
}

// TestUnparkedTaskWaitsAtADrainedParentBehindOlder: o of p/d waits in
// paused p's pause line, and t, younger, in paused p/c's. Both are
// resumed. p's drain takes o out, and o has yet to walk. t, taken out of
// p/c's line, passes its own group's drained line but not p's, though it
// is empty now: it waits there, and starts after o.
func TestUnparkedTaskWaitsAtADrainedParentBehindOlder(t *testing.T) {
	for _, fair := range []bool{false, true} {
		paused := true
		f, limits := pausableTree(t, fair, &paused, Unlimited, "p", "p/c")
		submit := f.stepping(t)
		o := submit("p/d", "o", MustWait)
		w := submit("p/c", "t", MustWait)
		pg, _ := f.r.Lookup("p")
		cg, _ := f.r.Lookup("p/c")
		require.Same(t, pg.pauseLine.Load(), o.p.line.Load())
		require.Same(t, cg.pauseLine.Load(), w.p.line.Load())

		paused = false
		require.ElementsMatch(t, []*Group[tk]{pg, cg}, f.r.Update(Unlimited, Unlimited, limits).Resumed)
		require.Equal(t, 1, pg.StartDrain())
		require.Same(t, o, pg.Unpark())
		require.Equal(t, 1, cg.StartDrain())
		require.Same(t, w, cg.Unpark())
		out, _, _, _ := w.p.Resume()
		require.Equal(t, MustWait, out, "t passed p's drained line ahead of o, fair %v", fair)
		require.Same(t, pg.pauseLine.Load(), w.p.line.Load())
		out, _, _, _ = o.p.Resume()
		require.Equal(t, Admitted, out)
		require.Same(t, w, pg.Unpark())
		out, _, _, _ = w.p.Resume()
		require.Equal(t, MustWait, out, "o holds p's permit")
		require.Nil(t, pg.Unpark())
		require.Nil(t, cg.Unpark())
		assert.Equal(t, []string{"t"}, f.end(t, o))
		assert.Empty(t, f.end(t, w))
		f.requireQuietKeys(t, "p", "p/c", "p/d")
	}
}
