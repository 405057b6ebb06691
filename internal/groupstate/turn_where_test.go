package groupstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWhereNamesTheLimitAFreshWalkWaitsForItsTurnAt: f holds a global
// permit and waits for g's turn, in no line, before g's concurrency
// limit. w walks on and m waits for its turn first: both are ahead. m,
// handed a permit, is between two lines.
func TestWhereNamesTheLimitAFreshWalkWaitsForItsTurnAt(t *testing.T) {
	f := newFixture(t, 3, false, fixed(Limits{Concurrency: 2, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	w, m, fresh, hs := f.freshBehindHanded(t)
	limit, group, ahead, ok := fresh.p.Where()
	assert.True(t, ok)
	assert.Equal(t, WaitConcurrency, limit)
	assert.Equal(t, "g", group)
	assert.Equal(t, 2, ahead, "w and m")
	_, _, _, ok = m.p.Where()
	assert.False(t, ok, "m was handed a permit")

	require.Equal(t, []string{"w", "m"}, resume(hs[0]))
	limit, _, ahead, ok = fresh.p.Where()
	assert.True(t, ok, "f waits in g's line now")
	assert.Equal(t, WaitConcurrency, limit)
	assert.Zero(t, ahead)
	assert.Equal(t, []string{"f"}, f.end(t, w))
	_, _, _, ok = fresh.p.Where()
	assert.False(t, ok, "f holds its permits")
	assert.Empty(t, f.end(t, m))
	assert.Empty(t, f.end(t, fresh))
	g, _ := f.r.Lookup("g")
	requireQuiet(t, f.gl, g)
}
