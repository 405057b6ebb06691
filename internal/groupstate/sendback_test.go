package groupstate

// A task handed a permit after a change of limits checks, as it walks on,
// the layers it holds (see sendback.go). These tests check who goes back.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aRunsWWaits readies, under IsolationOff with a cap of global, groups of
// limits lim, a of g running, and w of g holding a global permit and
// waiting for g's.
func aRunsWWaits(t *testing.T, global int) (f *fixture, lim func(string) Limits, a, w *tk) {
	t.Helper()
	lim = fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1})
	f = newFixture(t, global, false, lim)
	a, out := f.submit(t, "g", "a")
	require.Equal(t, Admitted, out)
	w, out = f.submit(t, "g", "w")
	require.Equal(t, MustWait, out, "w holds a global permit, and waits for g's")
	return f, lim, a, w
}

// TestATaskHandedItsLastLayerStartsOverALoweredLimit, under IsolationOff:
// w holds a global permit and waits for g's, which a holds. a's end hands
// w g's permit. The cap is lowered below the global permits held before w
// walks on. w was handed its last layer, so it counts as running and
// starts: a lowered limit drains, and never sends back a task that runs.
func TestATaskHandedItsLastLayerStartsOverALoweredLimit(t *testing.T) {
	f, lim, a, w := aRunsWWaits(t, 3)
	x, out := f.submit(t, "h", "x")
	require.Equal(t, Admitted, out)
	a.p.Release()
	a.p.Exit()
	require.Same(t, w, a.p.Handed(), "w is handed g's permit")
	require.Nil(t, a.p.Handed())

	require.Empty(t, f.r.Update(1, Unlimited, lim).Handed, "x and w hold the global permits")
	out, _, next, moved := w.p.Resume()
	assert.Equal(t, Admitted, out, "w starts")
	assert.Nil(t, next)
	assert.Nil(t, moved)
	for _, k := range []*tk{x, w} {
		assert.Empty(t, f.end(t, k))
	}
	g, _ := f.r.Lookup("g")
	h, _ := f.r.Lookup("h")
	requireQuiet(t, f.gl, g, h)
}

// TestALoweredCapSendsItsTasksBackOldestFirst, under IsolationOff: w1 holds
// a global permit and g's bulkhead, and waits for g's limit. w2, submitted
// after it, holds a global permit and waits for g's bulkhead. The cap,
// lowered to a's one permit, sends both back to the head of the global
// line. w1 must stay ahead of w2 there, though w2 waited at an earlier
// layer.
func TestALoweredCapSendsItsTasksBackOldestFirst(t *testing.T) {
	lim := fixed(Limits{Concurrency: 1, MaxInFlight: 2, QueueThreshold: Unlimited, Weight: 1})
	f := newFixture(t, 4, false, lim)
	a, out := f.submit(t, "g", "a")
	require.Equal(t, Admitted, out)
	f.now++
	w1, out := f.submit(t, "g", "w1")
	require.Equal(t, MustWait, out, "w1 waits for g's limit")
	f.now++
	w2, out := f.submit(t, "g", "w2")
	require.Equal(t, MustWait, out, "w2 waits for g's bulkhead")

	c := f.r.Update(1, Unlimited, lim)
	require.Empty(t, c.Handed)
	assert.ElementsMatch(t, []*tk{w1, w2}, c.Requeued)
	assert.Equal(t, []string{"w1"}, f.end(t, a), "w1 was submitted first")
	assert.Equal(t, []string{"w2"}, f.end(t, w1))
	assert.Empty(t, f.end(t, w2))
	g, _ := f.r.Lookup("g")
	requireQuiet(t, f.gl, g)
}

// TestACapUpdatedAtItsCountSendsNoTaskBack, under IsolationOff: a and w
// hold both global permits, and w waits for g's, which a holds. The cap,
// updated to 2 again, is not over its count: w keeps its place.
func TestACapUpdatedAtItsCountSendsNoTaskBack(t *testing.T) {
	f, lim, a, w := aRunsWWaits(t, 2)
	c := f.r.Update(2, Unlimited, lim)
	assert.Empty(t, c.Requeued)
	assert.Empty(t, c.Handed)
	assert.Equal(t, []string{"w"}, f.end(t, a))
	assert.Empty(t, f.end(t, w))
	g, _ := f.r.Lookup("g")
	requireQuiet(t, f.gl, g)
}

// TestChangesKeepTheLatestEnd: changes of limits may overlap (Tune and
// Update) and end in any order. A task submitted before the latest end,
// or while one runs, checks the layers it holds. One submitted after,
// with none running, need not.
func TestChangesKeepTheLatestEnd(t *testing.T) {
	var c changes
	c.begin()
	c.begin()
	assert.True(t, c.since(9), "changes are running")
	c.end(5)
	assert.True(t, c.since(9), "one is running")
	c.end(3)
	assert.True(t, c.since(5))
	assert.False(t, c.since(6), "none runs, and the latest ended at 5")
}

// TestATaskHandedMidWalkGoesBackFromATenantsLoweredBulkhead, under
// IsolationOff: w of p/u holds p's bulkhead and waits for u's limit, which
// a holds. a's end hands w u's permit, and p's bulkhead is lowered below
// what w and x hold before w walks on. w is in no line then, out of the
// lowering's reach. As it walks on it must find p's layer over its limit
// and go back to the head of p's bulkhead line, not start.
func TestATaskHandedMidWalkGoesBackFromATenantsLoweredBulkhead(t *testing.T) {
	lim := func(pIn int) func(string) Limits {
		return func(key string) Limits {
			if key == "p" {
				return Limits{Concurrency: 2, MaxInFlight: pIn, QueueThreshold: Unlimited, Weight: 1}
			}
			return Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1}
		}
	}
	f := newFixture(t, Unlimited, false, lim(3))
	f.r.SetParents(slashParents, nil)
	next := f.stepping(t)
	a := next("p/u", "a", Admitted)
	w := next("p/u", "w", MustWait) // for u's permit
	x := next("p/v", "x", Admitted)
	a.p.Release()
	a.p.Exit()
	require.Same(t, w, a.p.Handed(), "w is handed u's permit")

	require.Empty(t, f.r.Update(Unlimited, Unlimited, lim(1)).Handed)
	out, _, nx, moved := w.p.Resume()
	assert.Equal(t, MustWait, out, "w goes back to p's bulkhead line")
	assert.Nil(t, nx)
	require.NotNil(t, moved)
	assert.Equal(t, []*tk{w}, moved.Requeued)
	assert.Equal(t, []string{"w"}, f.end(t, x), "x's end lets w in")
	assert.Empty(t, f.end(t, w))
	f.requireQuietKeys(t, "p", "p/u", "p/v")
}
