package groupstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPermitsRejectionReleasesEverythingHeld: a task that holds the global
// permit and finds no group queue slot gives the global permit back.
func TestPermitsRejectionReleasesEverythingHeld(t *testing.T) {
	f := newFixture(t, 2, false, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 0}))
	first, out := f.submit(t, "g", "first")
	require.Equal(t, Admitted, out)
	second := &tk{name: "second"}
	f.r.Enter("g", &second.p, second, 0)
	out, reason := second.p.Try()
	require.Equal(t, Rejected, out)
	assert.Equal(t, ReasonGroupQueueFull, reason)
	_, _, inFlight := f.gl.Counts()
	assert.Equal(t, 1, inFlight, "the rejected task kept its global permit")
	second.p.Exit()
	f.end(t, first)
	g, _ := f.r.Lookup("g")
	requireQuiet(t, f.gl, g)
}

// TestPermitsKeepTheGroupSlotFromBulkheadToConcurrency: one slot covers a
// task's wait at layer 2 and then at layer 3.
func TestPermitsKeepTheGroupSlotFromBulkheadToConcurrency(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(Limits{Concurrency: 1, MaxInFlight: 2, QueueThreshold: 1}))
	a, out := f.submit(t, "g", "a")
	require.Equal(t, Admitted, out)
	b, out := f.submit(t, "g", "b")
	require.Equal(t, MustWait, out, "b waits at concurrency, holding the bulkhead and the slot")
	_, out = f.submit(t, "g", "c")
	require.Equal(t, Rejected, out, "the only slot is b's")
	assert.Equal(t, []string{"b"}, f.end(t, a))
	g, _ := f.r.Lookup("g")
	running, waiting, inFlight := g.Counts()
	assert.Equal(t, [3]int{1, 0, 1}, [3]int{running, waiting, inFlight})
	assert.Empty(t, f.end(t, b))
	requireQuiet(t, f.gl, g)
}

// TestPermitsWaitAtEachLayerInTurn: a task handed the global permit goes
// on to wait at the bulkhead, and the counts follow it.
func TestPermitsWaitAtEachLayerInTurn(t *testing.T) {
	f := newFixture(t, 1, false, fixed(Limits{Concurrency: 1, MaxInFlight: 1, QueueThreshold: Unlimited}))
	a, out := f.submit(t, "other", "a") // holds the global permit
	require.Equal(t, Admitted, out)
	b, out := f.submit(t, "g", "b")
	require.Equal(t, MustWait, out, "b waits at the global layer")
	g, _ := f.r.Lookup("g")
	_, waiting, _ := g.Counts()
	assert.Equal(t, 1, waiting)
	require.True(t, g.bulkhead.tryAcquire(), "someone else holds g's bulkhead")
	a.p.Release()
	require.Same(t, b, a.p.Handed())
	out, _, _, _ = b.p.Resume()
	require.Equal(t, MustWait, out, "b now waits at the bulkhead, holding the global permit")
	_, _, inFlight := f.gl.Counts()
	assert.Equal(t, 1, inFlight)
	require.True(t, b.p.Leave(), "b leaves the bulkhead line")
	b.p.Release()
	g.bulkhead.release(nil, 1)
	other, _ := f.r.Lookup("other")
	requireQuiet(t, f.gl, g, other)
}

// TestPermitsFairShareTakesTheGroupLayersFirst: under fair share a task
// waits for the global permit only once it holds its group's, and that
// wait counts against the group's queue threshold.
func TestPermitsFairShareTakesTheGroupLayersFirst(t *testing.T) {
	f := newFixture(t, 1, true, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 1, Weight: 1}))
	x, out := f.submit(t, "x", "x") // holds the only global permit
	require.Equal(t, Admitted, out)
	a1, out := f.submit(t, "a", "a1")
	require.Equal(t, MustWait, out, "a1 holds a's permits and waits for the global one")
	ga, _ := f.r.Lookup("a")
	_, conc, slots := ga.Held()
	assert.Equal(t, [2]int{1, 1}, [2]int{conc, slots})
	_, out = f.submit(t, "a", "a2")
	assert.Equal(t, Rejected, out, "a1's global wait took a's one slot")
	running, waiting, _ := ga.Counts()
	assert.Equal(t, [2]int{0, 1}, [2]int{running, waiting}, "a1 is waiting, not running")
	assert.Equal(t, []string{"a1"}, f.end(t, x))
	running, waiting, _ = ga.Counts()
	assert.Equal(t, [2]int{1, 0}, [2]int{running, waiting})
	f.end(t, a1)
	gx, _ := f.r.Lookup("x")
	requireQuiet(t, f.gl, ga, gx)
}

func TestPermitsReleaseIsIdempotent(t *testing.T) {
	f := newFixture(t, 2, false, fixed(Limits{Concurrency: 2, MaxInFlight: 2, QueueThreshold: Unlimited}))
	k, out := f.submit(t, "g", "k")
	require.Equal(t, Admitted, out)
	k.p.Release()
	k.p.Release()
	g, _ := f.r.Lookup("g")
	requireQuiet(t, f.gl, g)
}

func TestOldestWaitFollowsTheOldestWaitingTask(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	a, _ := f.submit(t, "g", "a")
	f.now = 10
	b, _ := f.submit(t, "g", "b")
	f.now = 15
	f.submit(t, "g", "c")
	g, _ := f.r.Lookup("g")
	assert.EqualValues(t, 90, g.OldestWait(100), "b waits since 10")
	require.True(t, b.p.Leave())
	b.p.Release()
	assert.EqualValues(t, 85, g.OldestWait(100), "then c, since 15")
	assert.Equal(t, []string{"c"}, f.end(t, a))
	assert.Zero(t, g.OldestWait(100))
}

// A group's tasks waiting in the global line, mixed with another group's,
// and at its own layers: the oldest is found wherever it waits, in both
// isolation modes.
func TestOldestWaitLooksInEveryLine(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "fair"}[fair], func(t *testing.T) {
			f := newFixture(t, 1, fair, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
			x, out := f.submit(t, "h", "x") // holds the global permit
			require.Equal(t, Admitted, out)
			f.now = 10
			a, _ := f.submit(t, "g", "a")
			f.now = 20
			y, _ := f.submit(t, "k", "y")
			f.now = 30
			b, _ := f.submit(t, "g", "b")
			f.now = 40
			c, _ := f.submit(t, "g", "c")
			g, _ := f.r.Lookup("g")
			h, _ := f.r.Lookup("h")
			k, _ := f.r.Lookup("k")
			assert.EqualValues(t, 90, g.OldestWait(100), "a waits since 10")
			assert.EqualValues(t, 80, k.OldestWait(100), "y waits since 20")
			assert.Zero(t, h.OldestWait(100))

			require.True(t, b.p.Leave(), "b leaves from the middle of g's tasks")
			f.end(t, b)
			assert.EqualValues(t, 90, g.OldestWait(100))
			require.True(t, a.p.Leave())
			f.end(t, a) // under fair share, c takes a's concurrency permit and waits on
			assert.EqualValues(t, 60, g.OldestWait(100), "then c, since 40")

			assert.Equal(t, []string{"y"}, f.end(t, x), "the global permit goes on in order")
			assert.EqualValues(t, 60, g.OldestWait(100))
			assert.Zero(t, k.OldestWait(100))
			assert.Equal(t, []string{"c"}, f.end(t, y))
			assert.Empty(t, f.end(t, c))
			assert.Zero(t, g.OldestWait(100))
			requireQuiet(t, f.gl, g, h, k)
		})
	}
}

// A task handed the last permit of its walk counts as running from then.
// It counts as waiting no more then too, before its owner walks it on, so
// a snapshot taken meanwhile counts it once. The last layer is the group's
// under IsolationOff, where w waits behind a of its group, and the global
// one under fair share, where w waits behind a of another group.
func TestAHandedTaskCountsOnceBeforeItWalksOn(t *testing.T) {
	for _, fair := range []bool{false, true} {
		global, aKey := 2, "g"
		if fair {
			global, aKey = 1, "x"
		}
		f := newFixture(t, global, fair, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1}))
		a, out := f.submit(t, aKey, "a")
		require.Equal(t, Admitted, out)
		w, out := f.submit(t, "g", "w")
		require.Equal(t, MustWait, out, "w waits for its last permit")
		a.p.Release()
		a.p.Exit()
		require.Same(t, w, a.p.Handed(), "a's permit goes to w")
		g, _ := f.r.Lookup("g")
		running, waiting, _ := g.Counts()
		assert.Equal(t, [2]int{1, 0}, [2]int{running, waiting}, "fair %v: w, handed its last permit, before it walks on", fair)
		assert.Equal(t, []string{"w"}, resume([]*tk{w}))
		f.end(t, w)
		requireQuiet(t, f.gl, g)
	}
}

// A task's Permits must be its first field: the task is found from it.
func TestEnterRefusesPermitsThatAreNotTheTasksFirstField(t *testing.T) {
	f := newFixture(t, 1, false, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	var k, other tk
	assert.PanicsWithValue(t, "groupstate: a task's Permits must be its first field", func() {
		f.r.Enter("g", &k.p, &other, f.now)
	})
}

// Under fair share a parent's kidQueue weighs each child by the parent's
// permits its subtree holds. w, handed its own group's permit, then takes
// its parent's free one: it counts for its group as any take does.
func TestAHandedTaskCountsItsParentsPermitForItsGroup(t *testing.T) {
	f := parentFixture(t, Unlimited, true, "p",
		Limits{Concurrency: 2, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1},
		Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1})
	submit := f.stepping(t)
	a := submit("p/c", "a", Admitted)
	w := submit("p/c", "w", MustWait)
	assert.Equal(t, []string{"w"}, f.end(t, a))
	c, _ := f.r.Lookup("p/c")
	assert.Equal(t, int64(1), c.kin.Load().held[1].Load(), "w holds one of p's permits")
	f.end(t, w)
	p, _ := f.r.Lookup("p")
	requireQuiet(t, f.gl, c, p)
}

// A parent's own task handed its permit counts in its share while it
// walks on to the global layer. Releases on two goroutines hand out one
// permit each before the first task walks on. The second goes to the
// child, which holds none, not to the parent's next own task.
func TestAParentsOwnTaskHandedAPermitCountsUntilItHoldsTheGlobalOne(t *testing.T) {
	open := Limits{Concurrency: Unlimited, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1}
	f := parentFixture(t, Unlimited, true, "t",
		Limits{Concurrency: 2, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1}, open)
	submit := f.stepping(t)
	a := submit("t/x", "a", Admitted)
	b := submit("t/x", "b", Admitted)
	o1 := submit("t", "o1", MustWait)
	o2 := submit("t", "o2", MustWait)
	y := submit("t/y", "y", MustWait)
	handed := func(k *tk) []*tk {
		k.p.Release()
		k.p.Exit()
		var hs []*tk
		for h := k.p.Handed(); h != nil; h = k.p.Handed() {
			hs = append(hs, h)
		}
		return hs
	}
	first := handed(a)
	require.Equal(t, []string{"o1"}, names(first), "the oldest waiter, of a tie at none held")
	second := handed(b) // o1 has not walked on yet
	require.Equal(t, []string{"y"}, names(second), "the parent's own tasks hold o1's permit")
	assert.Equal(t, []string{"o1", "y"}, resume(append(first, second...)))
	assert.Equal(t, []string{"o2"}, f.end(t, o1))
	f.end(t, y)
	f.end(t, o2)
	g, _ := f.r.Lookup("t")
	assert.Zero(t, g.fair.handed.Load())
	requireQuiet(t, f.gl, g)
}
