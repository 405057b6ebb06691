package groupstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAFreshWalkTakesBesideTheWalkerWhatLeavesItsCost: w of g, of cost 2,
// is handed a global permit by a raised cap, and walks on to g's
// concurrency limit of 4 holding g's turn. c, of cost 2, takes 2 of it
// beside w, which leaves w its 2. d, of cost 1, would leave w 1: it waits
// for the turn. w then takes its 2. d, its turn come, waits in g's line,
// and c's end hands it its permit.
func TestAFreshWalkTakesBesideTheWalkerWhatLeavesItsCost(t *testing.T) {
	lim := fixed(Limits{Concurrency: 4, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1})
	f := newFixture(t, 2, false, lim)
	try := f.costing()
	z, out := try("x", "z", 1)
	require.Equal(t, Admitted, out)
	w, out := try("g", "w", 2)
	require.Equal(t, MustWait, out, "w waits for the global cap")
	require.Equal(t, []*tk{w}, f.r.Update(Unlimited, Unlimited, lim).Handed, "the raised cap hands w its permit, and g's turn")

	c, out := try("g", "c", 2)
	assert.Equal(t, Admitted, out, "c leaves w its 2 permits")
	d, out := try("g", "d", 1)
	require.Equal(t, MustWait, out, "d would leave w 1: it waits for its turn")
	limit, group, ahead, ok := d.p.Where()
	assert.True(t, ok)
	assert.Equal(t, []any{WaitConcurrency, "g", 1}, []any{limit, group, ahead})

	g, _ := f.r.Lookup("g")
	require.Equal(t, []string{"w"}, resume([]*tk{w}), "w takes its 2; d's turn comes, and it waits in g's line")
	_, held, _ := g.Held()
	assert.Equal(t, 4, held)
	limit, _, ahead, ok = d.p.Where()
	assert.True(t, ok)
	assert.Equal(t, []any{WaitConcurrency, 0}, []any{limit, ahead})
	assert.Equal(t, []string{"d"}, f.end(t, c))
	for _, k := range []*tk{z, w, d} {
		assert.Empty(t, f.end(t, k))
	}
	f.requireQuietKeys(t, "x", "g")
}
