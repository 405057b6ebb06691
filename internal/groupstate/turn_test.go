package groupstate

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// handedBy releases each of rs in turn, as tasks ending on goroutines of
// their own, and returns the tasks each release handed a permit to.
func handedBy(rs ...*tk) [][]*tk {
	out := make([][]*tk, len(rs))
	for i, r := range rs {
		r.p.Release()
		r.p.Exit()
		for h := r.p.Handed(); h != nil; h = r.p.Handed() {
			out[i] = append(out[i], h)
		}
	}
	return out
}

// TestTurnKeepsTheGlobalLineOrder: w and m of group g wait for a global
// permit, in that order. Two releases hand one to each, to be carried on
// on two goroutines. If m's is carried first, m must still not start
// ahead of w at g's concurrency layer. m waits for its turn, which comes
// as w's walk stops.
func TestTurnKeepsTheGlobalLineOrder(t *testing.T) {
	f := newFixture(t, 2, false, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	x, out := f.submit(t, "x", "x")
	require.Equal(t, Admitted, out)
	y, out := f.submit(t, "y", "y")
	require.Equal(t, Admitted, out)
	w, out := f.submit(t, "g", "w")
	require.Equal(t, MustWait, out)
	m, out := f.submit(t, "g", "m")
	require.Equal(t, MustWait, out)
	hs := handedBy(x, y)
	g, _ := f.r.Lookup("g")
	_, waiting, _ := g.Counts()
	assert.Equal(t, 2, waiting, "both wait yet")
	started := resume(append(hs[1], hs[0]...)) // y's goroutine goes first
	require.Equal(t, []string{"w"}, started, "m started ahead of w")
	assert.Equal(t, []string{"m"}, f.end(t, w))
	assert.Empty(t, f.end(t, m))
	requireQuiet(t, f.gl, g)
}

// TestTurnPassesOnFromAWalkTurnedAway: a task whose walk on is turned away
// still passes its turn on. One waiting for its turn is in no line, so it
// cannot leave meanwhile. Its owner finds any stop once it has walked on.
func TestTurnPassesOnFromAWalkTurnedAway(t *testing.T) {
	f := newFixture(t, 3, false, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 0}))
	z, out := f.submit(t, "g", "z") // holds g's concurrency permit
	require.Equal(t, Admitted, out)
	x, _ := f.submit(t, "x", "x")
	y, _ := f.submit(t, "y", "y")
	w, out := f.submit(t, "g", "w")
	require.Equal(t, MustWait, out)
	m, out := f.submit(t, "g", "m")
	require.Equal(t, MustWait, out)
	hs := handedBy(x, y)
	require.Equal(t, [][]*tk{{w}, nil}, hs, "m waits for its turn")
	assert.False(t, m.p.Leave(), "m is in no line")

	out, reason, next, _ := w.p.Resume()
	require.Equal(t, Rejected, out, "no slot of g's queue to wait in")
	assert.Equal(t, ReasonGroupQueueFull, reason)
	require.Same(t, m, next, "w's turn passed on all the same")
	out, _, next, _ = m.p.Resume()
	require.Equal(t, Rejected, out)
	require.Nil(t, next)
	w.p.Exit()
	m.p.Exit()
	assert.Empty(t, f.end(t, z))
	g, _ := f.r.Lookup("g")
	requireQuiet(t, f.gl, g)
	assert.Zero(t, g.turns.Load().n.Load(), "nobody has the turn")
}

// admitAll submits a task of each key, named after it, each of which must
// be admitted.
func (f *fixture) admitAll(t *testing.T, keys ...string) []*tk {
	t.Helper()
	var ks []*tk
	for _, key := range keys {
		k, out := f.submit(t, key, key)
		require.Equal(t, Admitted, out, key)
		ks = append(ks, k)
	}
	return ks
}

// TestTurnKeepsAFreshTaskBehindTheHanded: w and m of group g wait for a
// global permit, in that order, and are handed one each. m waits for its
// turn while w's walk is yet to go on. A third permit is free when f of g
// is submitted. f must not take g's concurrency permit ahead of them: it
// waits for its turn behind m.
func TestTurnKeepsAFreshTaskBehindTheHanded(t *testing.T) {
	f := newFixture(t, 3, false, fixed(Limits{Concurrency: 2, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	w, m, fresh, hs := f.freshBehindHanded(t)
	g, _ := f.r.Lookup("g")
	_, waiting, _ := g.Counts()
	assert.Equal(t, 3, waiting)

	require.Equal(t, []string{"w", "m"}, resume(hs[0]), "f's turn came after m's, and it waits for g's permit")
	assert.Equal(t, []string{"f"}, f.end(t, w))
	assert.Empty(t, f.end(t, m))
	assert.Empty(t, f.end(t, fresh))
	requireQuiet(t, f.gl, g)
	assert.Zero(t, g.turns.Load().n.Load(), "nobody has the turn")
}

// TestTurnWaitersGoInTheOrderLinesServe: tasks waiting for their turn,
// handed a permit (takeTurn) or fresh (waitTurn), take it by priority,
// then age, whatever order they came in.
func TestTurnWaitersGoInTheOrderLinesServe(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(Limits{Concurrency: Unlimited, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	enter := func(name string, at int64, prio uint8) *tk {
		k := &tk{name: name}
		f.r.Enter("g", &k.p, k, at)
		k.p.SetPriority(prio)
		return k
	}
	old, mid, young := enter("old", 1, 1), enter("mid", 2, 1), enter("young", 3, 1)
	urgent := enter("urgent", 4, 0)
	g, _ := f.r.Lookup("g")
	require.True(t, old.p.tryTurn(), "old walks on")
	require.NotZero(t, g.turns.Load().n.Load())
	assert.True(t, young.p.waitTurn())
	assert.False(t, mid.p.takeTurn())
	assert.True(t, urgent.p.waitTurn())

	var order []string
	for w := g.passTurn(); w != nil; w = g.passTurn() {
		order = append(order, w.task().name)
	}
	assert.Equal(t, []string{"urgent", "mid", "young"}, order)
	assert.Zero(t, g.turns.Load().n.Load())
	assert.False(t, young.p.waitTurn(), "nobody has the turn: it walks on")
	for _, k := range []*tk{old, mid, young, urgent} {
		k.p.Exit()
	}
}

// TestTurnWaitersInAnyArrivalOrderGoInTheOrderLinesServe parks tasks of
// random priorities and ages in random order. A resumed task is older
// than those parked before it, and an urgent one goes ahead of many.
func TestTurnWaitersInAnyArrivalOrderGoInTheOrderLinesServe(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 50 {
		f := newFixture(t, Unlimited, false, fixed(Limits{Concurrency: Unlimited, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
		walker := &tk{name: "walker"}
		f.r.Enter("g", &walker.p, walker, 0)
		require.True(t, walker.p.tryTurn())
		ks := make([]*tk, 1+r.IntN(40))
		for i := range ks {
			ks[i] = &tk{name: fmt.Sprint(i)}
			f.r.Enter("g", &ks[i].p, ks[i], int64(1+i))
			ks[i].p.SetPriority(uint8(r.IntN(3)))
		}
		want := slices.Clone(ks)
		slices.SortStableFunc(want, func(a, b *tk) int { return cmp.Compare(a.p.prio, b.p.prio) })
		r.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
		for _, k := range ks {
			require.True(t, k.p.waitTurn())
		}
		g, _ := f.r.Lookup("g")
		var got []*tk
		for w := g.passTurn(); w != nil; w = g.passTurn() {
			got = append(got, w.task())
		}
		require.Equal(t, names(want), names(got), "round %d", round)
		for _, k := range append(ks, walker) {
			k.p.Exit()
		}
	}
}

func names(ks []*tk) []string {
	var s []string
	for _, k := range ks {
		s = append(s, k.name)
	}
	return s
}

// TestTurnKeepsAFreshTaskBehindTheHandedUnderFairShare: under fair share
// w and m of group g wait for g's concurrency, and are handed it as r1
// and r2 end. m waits for its turn while w's walk to the global layer is
// yet to go on. r3's permit is free when f of g is submitted, and so are
// global ones. f must not start ahead of w and m.
func TestTurnKeepsAFreshTaskBehindTheHandedUnderFairShare(t *testing.T) {
	f := newFixture(t, 5, true, fixed(Limits{Concurrency: 3, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1}))
	rs := f.admitAll(t, "g", "g", "g", "x", "y")
	w, out := f.submit(t, "g", "w")
	require.Equal(t, MustWait, out)
	m, out := f.submit(t, "g", "m")
	require.Equal(t, MustWait, out)
	hs := handedBy(rs[:3]...)
	require.Equal(t, [][]*tk{{w}, nil, nil}, hs, "m waits for its turn, r3's permit is free")

	fresh, out := f.submit(t, "g", "f")
	require.Equal(t, MustWait, out, "f started ahead of w and m")
	require.Equal(t, []string{"w", "m", "f"}, resume(hs[0]))
	for _, k := range append([]*tk{w, m, fresh}, rs[3:]...) {
		assert.Empty(t, f.end(t, k))
	}
	g, _ := f.r.Lookup("g")
	requireQuiet(t, f.gl, g)
}

// TestTurnLeavesAChildsTaskItsPlaceInItsParentsLine: b of acme/u2 is
// handed acme's permit, so it has u2's turn. d of u2, fresh, finds a free
// permit of u2's own limit, which b holds already and will not take
// again. It takes it and waits in acme's line behind c, ahead of e of
// acme. Waiting for u2's turn instead, it would reach acme's line after
// e, out of its arrival order among acme's subtree.
func TestTurnLeavesAChildsTaskItsPlaceInItsParentsLine(t *testing.T) {
	f := parentFixture(t, Unlimited, false, "acme",
		Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1},
		Limits{Concurrency: 2, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1})
	submit := f.stepping(t)
	a := submit("acme/u1", "a", Admitted)
	b := submit("acme/u2", "b", MustWait)
	c := submit("acme/u1", "c", MustWait)
	a.p.Release()
	a.p.Exit()
	require.Same(t, b, a.p.Handed(), "b has acme's permit and u2's turn")
	d := submit("acme/u2", "d", MustWait)
	acme, _ := f.r.Lookup("acme")
	assert.Same(t, &acme.conc, d.p.line.Load(), "d waits in acme's line")
	e := submit("acme", "e", MustWait)

	out, _, next, _ := b.p.Resume()
	require.Equal(t, Admitted, out)
	require.Nil(t, next)
	assert.Equal(t, []string{"c"}, f.end(t, b))
	assert.Equal(t, []string{"d"}, f.end(t, c))
	assert.Equal(t, []string{"e"}, f.end(t, d))
	assert.Empty(t, f.end(t, e))
	requireQuiet(t, f.gl, acme)
}

// TestTurnWaiterHoldingALoweredLayerGoesBack: f of g waits for its turn,
// out of every line, holding a global permit. w and m, handed one each,
// walk on first. A change lowers the global limit below what is held. Its
// sweep reaches none of the three. w and m go back to the global line as
// they walk on (sendBack). When f's turn comes, g's concurrency permit is
// free, but f holds a global permit over the new limit: it goes back too.
// The three wait in the global line in the order it serves them.
func TestTurnWaiterHoldingALoweredLayerGoesBack(t *testing.T) {
	f := newFixture(t, 5, false, fixed(Limits{Concurrency: 3, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	a, _ := f.submit(t, "g", "a")
	b, _ := f.submit(t, "g", "b")
	w, m, fresh, hs := f.freshBehindHanded(t)

	c := f.r.Update(2, Unlimited, fixed(Limits{Concurrency: 3, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	require.Empty(t, c.Handed)
	assert.Empty(t, resume(hs[0]), "w, m and f wait for the global permits a and b hold")
	g, _ := f.r.Lookup("g")
	_, conc, _ := g.Held()
	assert.Equal(t, 2, conc)

	// The global line serves them in order, one at a time: the limit is 2.
	assert.Equal(t, []string{"w"}, f.end(t, a))
	assert.Equal(t, []string{"m"}, f.end(t, b))
	assert.Equal(t, []string{"f"}, f.end(t, w))
	assert.Empty(t, f.end(t, m))
	assert.Empty(t, f.end(t, fresh))
	requireQuiet(t, f.gl, g)
}

// freshBehindHanded fills f's global layer with tasks of x, y and z. w and
// m of group g wait for a global permit, in that order. x's and y's ends
// hand one to each (hs), and z's leaves one free. m waits for its turn
// while w's walk is yet to go on. fresh, of g, takes the free permit and
// waits for its turn behind m, in no line.
func (f *fixture) freshBehindHanded(t *testing.T) (w, m, fresh *tk, hs [][]*tk) {
	t.Helper()
	others := f.admitAll(t, "x", "y", "z")
	w, out := f.submit(t, "g", "w")
	require.Equal(t, MustWait, out)
	m, out = f.submit(t, "g", "m")
	require.Equal(t, MustWait, out)
	hs = handedBy(others...)
	require.Equal(t, [][]*tk{{w}, nil, nil}, hs, "m waits for its turn, z's permit is free")
	fresh, out = f.submit(t, "g", "f")
	require.Equal(t, MustWait, out, "f started ahead of w and m")
	require.Nil(t, fresh.p.line.Load(), "f waits for its turn, in no line")
	return w, m, fresh, hs
}

// TestAFreshWalkWaitsForTheTurnOfATaskHandedAnEarlierLayer: a raised cap
// hands w of g a global permit and leaves one free. f, new, takes that one
// and finds g's concurrency permit free. w, older, will come to that layer
// after it, so f waits for w's turn, and then for the permit w took. So
// too when g's bulkhead, between the two, is limited.
func TestAFreshWalkWaitsForTheTurnOfATaskHandedAnEarlierLayer(t *testing.T) {
	for _, bulk := range []int{Unlimited, 2} {
		lim := fixed(Limits{Concurrency: 1, MaxInFlight: bulk, QueueThreshold: Unlimited})
		f := newFixture(t, 1, false, lim)
		x, out := f.submit(t, "x", "x")
		require.Equal(t, Admitted, out)
		w, out := f.submit(t, "g", "w")
		require.Equal(t, MustWait, out, "w waits for the global permit")
		require.Equal(t, []*tk{w}, f.r.Update(3, Unlimited, lim).Handed)

		fresh, out := f.submit(t, "g", "f")
		require.Equal(t, MustWait, out, "f waits for w's turn, bulkhead %d", bulk)
		out, _, next, _ := w.p.Resume()
		require.Equal(t, Admitted, out)
		require.Same(t, fresh, next, "f's walk goes on as w's stops")
		out, _, next, _ = fresh.p.Resume()
		require.Equal(t, MustWait, out, "w holds g's permit")
		require.Nil(t, next)
		assert.Equal(t, []string{"f"}, f.end(t, w))
		assert.Empty(t, f.end(t, fresh))
		assert.Empty(t, f.end(t, x))
		f.requireQuietKeys(t, "x", "g")
	}
}
