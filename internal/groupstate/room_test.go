package groupstate

import (
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
	f = newQueuedFixture(t, 1, 1, false, fixed(Limits{Concurrency: 1, MaxInFlight: 1, QueueThreshold: Unlimited}))
	f.gl.SetHooks(func(*tk) {}, displaced, func(*tk) bool { return false })

	a, out := f.submit(t, "other", "a")
	require.Equal(t, Admitted, out)
	b, out = f.submitPrio(t, "g", "b", NumPriorities-1)
	require.Equal(t, MustWait, out, "b waits at the global layer, holding the global queue's only slot")
	d = &tk{name: "d"}
	f.r.Enter("x", &d.p, d, f.now)
	d.p.SetPriority(0)
	f.gl.SetDisplacing(true)
	return f, a, b, d
}

// displacedNames sets f's hooks so that each task its Global displaces
// is listed by name.
func displacedNames(f *fixture) *[]string {
	names := new([]string)
	f.gl.SetHooks(func(*tk) {}, func(v *tk) { *names = append(*names, v.name) }, func(*tk) bool { return false })
	return names
}

// requireAllQuiet requires the global layer and the fixture's groups to
// have every permit and slot back.
func (f *fixture) requireAllQuiet(t *testing.T) {
	t.Helper()
	f.requireQuietKeys(t, "g", "other", "x")
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

	v, l := victim(d.p.prio, heldGlobalSlot, d.p.group, false)
	require.Same(t, &b.p, v)

	// b is served meanwhile, and goes on to wait at its bulkhead.
	g, _ := f.r.Lookup("g")
	require.True(t, g.bulkhead.tryAcquire(), "someone else holds g's bulkhead")
	a.p.Release()
	require.Same(t, b, a.p.Handed())
	out, _, _, _ := b.p.Resume()
	require.Equal(t, MustWait, out, "b waits at its bulkhead")
	_, slots := f.gl.Held()
	require.Zero(t, slots, "b gave the global slot back")

	assert.False(t, d.p.takeRoom(v, l, heldGlobalSlot, nil, 0), "d took a slot b no longer holds")
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
	g.bulkhead.release(nil, 1)
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

// TestAQueueHandsItsSlotsToOneCallerAtATime: a raised threshold frees
// three slots for three blocked callers, but the queue hands them through
// its door, one at a time, each once the caller before has placed its
// task (in line, here) or given its slot back: so the callers place their
// tasks in the order they were served, whatever order their goroutines
// run in.
func TestAQueueHandsItsSlotsToOneCallerAtATime(t *testing.T) {
	lim := Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 1, Weight: 1}
	f := newFixture(t, Unlimited, false, fixed(lim))
	var woken []string
	f.gl.SetHooks(func(k *tk) { woken = append(woken, k.name) }, func(*tk) {}, func(*tk) bool { return false })
	a1, out := f.submit(t, "g", "a1")
	require.Equal(t, Admitted, out)
	a2, out := f.submit(t, "g", "a2")
	require.Equal(t, MustWait, out)
	var cs []*tk
	for _, name := range []string{"c1", "c2", "c3"} {
		c := &tk{name: name}
		f.r.Enter("g", &c.p, c, f.now)
		seen, _ := c.p.Nudges()
		out, reason := c.p.Try()
		require.Equal(t, Rejected, out)
		require.True(t, c.p.Block(reason, seen), "%s's caller waits for a slot", name)
		cs = append(cs, c)
	}

	lim.QueueThreshold = 4
	f.r.Update(Unlimited, Unlimited, fixed(lim))
	assert.Equal(t, []string{"c1"}, woken, "the first caller holds the door")
	c1, c2, c3 := cs[0], cs[1], cs[2]
	c1.p.Unblock()
	door := c1.p.TakeDoor()
	out, _ = c1.p.Try()
	require.Equal(t, MustWait, out)
	assert.Equal(t, []string{"c1"}, woken, "the door is still c1's")
	door.Pass()
	assert.Equal(t, []string{"c1", "c2"}, woken, "c1's task has its place: c2 is let through")

	c2.p.Unblock()
	c2.p.Release() // c2's caller gives up: the door goes on with its slot
	assert.Equal(t, []string{"c1", "c2", "c3"}, woken)
	c3.p.Unblock()
	door = c3.p.TakeDoor()
	out, _ = c3.p.Try()
	require.Equal(t, MustWait, out)
	door.Pass()

	assert.Equal(t, []string{"a2"}, f.end(t, a1))
	assert.Equal(t, []string{"c1"}, f.end(t, a2))
	assert.Equal(t, []string{"c3"}, f.end(t, c1))
	assert.Empty(t, f.end(t, c3))
	c2.p.Exit()
	g, _ := f.r.Lookup("g")
	requireQuiet(t, f.gl, g)
}

// TestASlotFreedBeforeTheCallerBlocksIsTaken: c's walk finds g's queue
// full. a2 starts before c's caller blocks, and gives its slot back with
// no caller waiting for it. c's caller must take that slot, not wait for a
// hand-off no one is left to make.
func TestASlotFreedBeforeTheCallerBlocksIsTaken(t *testing.T) {
	lim := Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 1, Weight: 1}
	f := newFixture(t, Unlimited, false, fixed(lim))
	woken := wakes(f)
	a1, out := f.submit(t, "g", "a1")
	require.Equal(t, Admitted, out)
	a2, out := f.submit(t, "g", "a2")
	require.Equal(t, MustWait, out, "a2 holds g's only slot")
	c := &tk{name: "c"}
	f.r.Enter("g", &c.p, c, f.now)
	seen, _ := c.p.Nudges()
	out, reason := c.p.Try()
	require.Equal(t, Rejected, out)
	assert.Equal(t, []string{"a2"}, f.end(t, a1), "a2 starts and gives its slot back")
	require.False(t, c.p.Block(reason, seen), "c's caller takes the slot a2 gave back")
	c.p.Unblock()
	assert.Zero(t, *woken)
	out, _ = c.p.Try()
	require.Equal(t, MustWait, out, "c waits holding the slot")
	assert.Equal(t, []string{"c"}, f.end(t, a2))
	assert.Empty(t, f.end(t, c))
	g, _ := f.r.Lookup("g")
	requireQuiet(t, f.gl, g)
}

// A task that waited at its parent's layer holds a slot of the parent's
// queue. Handed the parent's permit, it walks on and waits at the global
// layer. It gives the parent's slot back as it does: a new task of the
// parent's subtree may wait in it.
func TestATaskWaitingPastItsParentsLayerGivesItsSlotBack(t *testing.T) {
	f := parentFixture(t, 2, true, "p",
		Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 1, Weight: 1},
		Limits{Concurrency: 2, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1})
	submit := f.stepping(t)
	x := submit("x", "x", Admitted) // holds a global permit
	b := submit("p/c", "b", Admitted)
	a := submit("p/c", "a", MustWait) // waits for p's permit, in p's one slot
	y := submit("y", "y", MustWait)   // waits for a global permit
	assert.Equal(t, []string{"y"}, f.end(t, b), "b's global permit goes to y, p's to a, which waits for a global one")
	d := submit("p/d", "d", MustWait) // waits for p's permit, in the slot a gave back
	assert.Equal(t, []string{"a"}, f.end(t, x))
	assert.Equal(t, []string{"d"}, f.end(t, a))
	f.end(t, y)
	f.end(t, d)
	f.requireQuietKeys(t, "x", "y", "p", "p/c", "p/d")
}

// A task of a child that moved on to its parent's bulkhead line, the first
// layer under fair share, keeps its slot of the child's queue. A task of
// the child that finds that queue full displaces it there.
func TestDisplacingFindsTheVictimInItsParentsFirstLine(t *testing.T) {
	f := parentFixture(t, Unlimited, true, "p",
		Limits{Concurrency: Unlimited, MaxInFlight: 2, QueueThreshold: Unlimited, Weight: 1},
		Limits{Concurrency: Unlimited, MaxInFlight: 1, QueueThreshold: 1, Weight: 1})
	displaced := displacedNames(f)
	f.gl.SetDisplacing(true)
	submit := f.stepping(t)
	r1 := submit("p/c", "r1", Admitted) // holds c's bulkhead and one of p's
	r2 := submit("p/e", "r2", Admitted) // holds p's other
	w := submit("p/x", "w", MustWait)   // waits at p's bulkhead
	v := submit("p/c", "v", MustWait)   // waits at c's bulkhead, in c's one slot
	require.Equal(t, []string{"w"}, f.end(t, r1), "v goes on to wait at p's bulkhead")

	d := submit("p/c", "d", MustWait)
	require.Equal(t, []string{"v"}, *displaced, "d took v's slot")
	assert.False(t, v.p.Leave(), "v is out of line")
	assert.Empty(t, f.end(t, v), "d waits at p's bulkhead")
	assert.Equal(t, []string{"d"}, f.end(t, w))
	assert.Empty(t, f.end(t, r2))
	f.end(t, d)
	f.requireQuietKeys(t, "p", "p/c", "p/e", "p/x")
}

// Under IsolationOff a resumed task comes to the global queue holding its
// group's slot. While the queue is past its threshold, only a task that
// holds no other slot is displaced: here b, not r, which is ahead of it.
func TestDisplacingPassesOverAResumedTaskPastTheGlobalThreshold(t *testing.T) {
	paused := true
	limits := func(key string) Limits {
		return Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 5, Paused: paused && key == "g"}
	}
	f := newQueuedFixture(t, 1, 1, false, limits)
	displaced := displacedNames(f)
	submit := f.stepping(t)
	a := submit("other", "a", Admitted) // holds the global permit
	r := submit("g", "r", MustWait)     // parks, holding g's slot
	paused = false
	f.r.Update(1, 1, limits)
	g, _ := f.r.Lookup("g")
	require.Equal(t, 1, g.StartDrain())
	require.Same(t, r, g.Unpark())
	out, _, _, _ := r.p.Resume()
	require.Equal(t, MustWait, out, "r waits for the global permit, in the global queue's one slot")
	require.Nil(t, g.Unpark())
	f.r.Update(1, 2, limits)
	b := submit("x", "b", MustWait)
	f.r.Update(1, 1, limits) // two slots held, past the threshold

	f.gl.SetDisplacing(true)
	d := submit("y", "d", MustWait)
	require.Equal(t, []string{"b"}, *displaced)
	assert.False(t, b.p.Leave(), "b is out of line")
	f.end(t, b)
	f.end(t, a)
	f.end(t, r)
	f.end(t, d)
	f.requireQuietKeys(t, "other", "g", "x", "y")
}

// A task of a child that waits in its parent's line holds slots of both
// queues. While the child's queue is past its threshold it is passed over:
// the newcomer finds no victim, and is turned away.
func TestDisplacingPassesOverATaskHoldingItsParentsSlotToo(t *testing.T) {
	threshold := 1
	limits := func(key string) Limits {
		if key == "p" {
			return Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 5}
		}
		return Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: threshold}
	}
	f := newFixture(t, Unlimited, false, limits)
	f.r.SetParents(slashParents, nil)
	displaced := displacedNames(f)
	submit := f.stepping(t)
	r := submit("p/c", "r", Admitted)
	y := submit("p/e", "y", MustWait) // waits for p's permit
	w := submit("p/c", "w", MustWait) // waits for c's, in c's slot
	require.Equal(t, []string{"y"}, f.end(t, r), "w waits for p's permit, in a slot of p's queue too")
	threshold = 0
	f.r.Update(Unlimited, Unlimited, limits) // c's queue is past its threshold

	f.gl.SetDisplacing(true)
	d := submit("p/c", "d", Rejected)
	assert.Empty(t, *displaced)
	d.p.Exit()
	assert.Equal(t, []string{"w"}, f.end(t, y))
	f.end(t, w)
	f.requireQuietKeys(t, "p", "p/c", "p/e")
}
