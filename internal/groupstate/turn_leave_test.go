package groupstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAFreshWalkLeavesItsWaitForTheTurn: f, fresh, waits for g's turn
// behind w and m, handed permits. Its turn may never come: the walk ahead
// may wait for f's caller (a Do in a listener). So Leave takes f out, and
// f gives back what it took. m, handed a permit, keeps waiting. The turn
// then passes from w to m alone.
func TestAFreshWalkLeavesItsWaitForTheTurn(t *testing.T) {
	f := newFixture(t, 3, false, fixed(Limits{Concurrency: 2, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	w, m, fresh, hs := f.freshBehindHanded(t)
	g, _ := f.r.Lookup("g")
	assert.False(t, m.p.Leave(), "m, handed a permit, waits for its turn")
	require.True(t, fresh.p.Leave(), "f leaves its wait for the turn")
	assert.False(t, fresh.p.Leave(), "f left already")
	assert.Empty(t, f.end(t, fresh), "f's global permit goes to nobody waiting")

	require.Equal(t, []string{"w", "m"}, resume(hs[0]), "the turn passed from w to m")
	assert.Empty(t, f.end(t, w))
	assert.Empty(t, f.end(t, m))
	requireQuiet(t, f.gl, g)
	assert.Zero(t, g.turns.Load().n.Load(), "nobody has the turn")
}

// TestASweepTakesTheFreshWalksWaitingForTheTurn: Shutdown takes f, fresh
// and waiting for g's turn, as it takes the tasks in g's lines. m, handed
// a permit, is left to its turn. Its owner finds the stop as it walks on.
func TestASweepTakesTheFreshWalksWaitingForTheTurn(t *testing.T) {
	f := newFixture(t, 3, false, fixed(Limits{Concurrency: 2, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	w, m, fresh, hs := f.freshBehindHanded(t)
	g, _ := f.r.Lookup("g")
	swept := g.Shutdown(errShut, nil)
	require.Equal(t, []*tk{fresh}, swept)
	assert.Empty(t, f.end(t, fresh))

	require.Equal(t, []string{"w", "m"}, resume(hs[0]))
	assert.Empty(t, f.end(t, w))
	assert.Empty(t, f.end(t, m))
	requireQuiet(t, f.gl, g)
	assert.Zero(t, g.turns.Load().n.Load(), "nobody has the turn")
}
