package groupstate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// displacing is a fixture under IsolationOff with one global permit and a
// global queue of one slot, groups of one permit at each layer, and
// displaced as the hook given each displaced task. In it, a (group
// "other") holds the global permit; b (group "g", the lowest priority)
// waits for it, holding the global queue's only slot; and d (group "x",
// the highest priority, displacing) has entered but not tried yet.
func displacing(t *testing.T, displaced func(v *tk)) (f *fixture, a, b, d *tk) {
	t.Helper()
	f = &fixture{gl: NewGlobal[tk](1, 1, false)}
	f.r = NewRegistry(context.Background(), f.gl, fixed(Limits{Concurrency: 1, MaxInFlight: 1, QueueThreshold: Unlimited}), func() int64 { return f.now })
	f.gl.SetHooks(func(*tk) {}, displaced, func(*tk) bool { return false })

	a, out := f.submit(t, "other", "a")
	require.Equal(t, Admitted, out)
	b = &tk{name: "b"}
	f.r.Enter("g", &b.p, b, f.now)
	b.p.SetPriority(NumPriorities-1, false)
	out, _ = b.p.Try()
	require.Equal(t, MustWait, out, "b waits at the global layer, holding the global queue's only slot")
	d = &tk{name: "d"}
	f.r.Enter("x", &d.p, d, f.now)
	d.p.SetPriority(0, true)
	return f, a, b, d
}

// requireAllQuiet requires the global layer and the fixture's groups to
// have every permit and slot back.
func (f *fixture) requireAllQuiet(t *testing.T) {
	t.Helper()
	var gs []*Group[tk]
	for _, key := range []string{"g", "other", "x"} {
		g, ok := f.r.Lookup(key)
		require.True(t, ok, key)
		gs = append(gs, g)
	}
	requireQuiet(t, f.gl, gs...)
}

// TestDisplacingTakesOnlyASlotStillHeld: between finding its victim and
// taking it out of line, a displacing task may see the victim served. Under
// IsolationOff the victim then gives its global slot back and waits at its
// bulkhead, where it must not be displaced: its slot is no longer there to
// take, and the queue's count would go below zero once the displacing task
// gave back the slot it thought it took.
func TestDisplacingTakesOnlyASlotStillHeld(t *testing.T) {
	var displaced []string
	f, a, b, d := displacing(t, func(v *tk) { displaced = append(displaced, v.name) })

	v, l := victim(d.p.prio, heldGlobalSlot, d.p.group)
	require.Same(t, &b.p, v)

	// b is served meanwhile, and goes on to wait at its bulkhead.
	g, _ := f.r.Lookup("g")
	require.True(t, g.bulkhead.tryAcquire(), "someone else holds g's bulkhead")
	a.p.Release()
	require.Same(t, b, a.p.Handed())
	out, _ := b.p.Resume()
	require.Equal(t, MustWait, out, "b waits at its bulkhead")
	_, slots := f.gl.Held()
	require.Zero(t, slots, "b gave the global slot back")

	assert.False(t, d.p.takeRoom(v, l, heldGlobalSlot), "d took a slot b no longer holds")
	assert.Empty(t, displaced)
	_, slots = f.gl.Held()
	assert.Zero(t, slots)

	// The slot is free: d takes it and waits for the global permit b holds.
	out, _ = d.p.Try()
	require.Equal(t, MustWait, out)
	assert.Empty(t, displaced)
	require.True(t, d.p.Leave())
	d.p.Release()
	d.p.Exit()
	require.True(t, b.p.Leave())
	b.p.Release()
	b.p.Exit()
	g.bulkhead.release(nil)
	a.p.Exit()
	f.requireAllQuiet(t)
}

// TestDisplacingTakesTheSlotOfTheTaskFound: with nothing moving meanwhile,
// the task found gives up its slot and its place in line to the newcomer.
func TestDisplacingTakesTheSlotOfTheTaskFound(t *testing.T) {
	var displaced []*tk
	f, a, b, d := displacing(t, func(v *tk) { displaced = append(displaced, v) })

	out, _ := d.p.Try()
	require.Equal(t, MustWait, out, "d waits in b's slot")
	require.Equal(t, []*tk{b}, displaced)
	assert.False(t, b.p.Leave(), "b is out of line")
	b.p.Release()
	b.p.Exit()
	_, slots := f.gl.Held()
	assert.Equal(t, 1, slots, "one slot, d's")

	assert.Equal(t, []string{"d"}, f.end(t, a))
	f.end(t, d)
	f.requireAllQuiet(t)
}
