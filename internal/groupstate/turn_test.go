package groupstate

import (
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

	out, reason, next := w.p.Resume()
	require.Equal(t, Rejected, out, "no slot of g's queue to wait in")
	assert.Equal(t, ReasonGroupQueueFull, reason)
	require.Same(t, m, next, "w's turn passed on all the same")
	out, _, next = m.p.Resume()
	require.Equal(t, Rejected, out)
	require.Nil(t, next)
	w.p.Exit()
	m.p.Exit()
	assert.Empty(t, f.end(t, z))
	g, _ := f.r.Lookup("g")
	requireQuiet(t, f.gl, g)
	assert.Zero(t, g.turns.Load().n.Load(), "nobody has the turn")
}
