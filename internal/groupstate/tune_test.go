package groupstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tuning stands for the caller's adaptive state.
type tuning struct{ name string }

func tuned(conc int, tu *tuning) func(string) Limits {
	return fixed(Limits{Concurrency: conc, MaxInFlight: Unlimited, QueueThreshold: 10, Tuning: tu})
}

func TestTuneRaisesAtOnceAndLowersWithoutTakingPermitsBack(t *testing.T) {
	tu := &tuning{"g"}
	f := newFixture(t, Unlimited, false, tuned(2, tu))
	var ks []*tk
	for i := range 5 {
		k, _ := f.submit(t, "g", string(rune('a'+i)))
		ks = append(ks, k)
	}
	g, _ := f.r.Lookup("g")
	require.Same(t, tu, g.Tuning())

	old, c := f.r.Tune(g, tu, 4, fixedQueue(7))
	assert.Equal(t, 2, old)
	assert.Equal(t, []string{"c", "d"}, resume(c.Handed), "the raised limit hands on at once, in order")
	assert.Equal(t, Limits{Concurrency: 4, MaxInFlight: Unlimited, QueueThreshold: 7, Weight: 1, Tuning: tu}, g.Limits())
	assert.Equal(t, 4, g.Running())
	assert.Equal(t, 4, g.Concurrency())

	_, c = f.r.Tune(g, tu, 1, fixedQueue(7))
	assert.Empty(t, c.Handed)
	assert.Empty(t, c.Requeued)
	assert.Equal(t, 4, g.Running(), "a lowered limit takes no permit back")
	for _, k := range ks[:3] {
		assert.Empty(t, f.end(t, k), "nothing starts while the group runs at or over its limit")
	}
	assert.Equal(t, []string{"e"}, f.end(t, ks[3]))
	f.end(t, ks[4])

	_, c = f.r.Tune(g, tu, 1, fixedQueue(7))
	assert.Nil(t, c, "no change")
	requireQuiet(t, f.gl, g)
}

func TestTuneLeavesTheLimitsOfAnUpdateAlone(t *testing.T) {
	old := &tuning{"old"}
	f := newFixture(t, Unlimited, false, tuned(2, old))
	f.submit(t, "g", "a")
	g, _ := f.r.Lookup("g")
	fresh := &tuning{"fresh"}
	f.r.Update(Unlimited, Unlimited, tuned(3, fresh))
	n, c := f.r.Tune(g, old, 1, fixedQueue(1))
	assert.Nil(t, c, "a change computed from replaced limits")
	assert.Equal(t, 3, n)
	assert.Equal(t, 3, g.Concurrency())
}

// Under fair share a task holding its group's concurrency permit may still
// wait for a global one: a lowered limit sends it back, as Update does.
func TestTuneUnderFairShareSendsBackTasksPastALoweredLimit(t *testing.T) {
	tu := &tuning{"g"}
	f := newFixture(t, 1, true, tuned(3, tu))
	run, out := f.submit(t, "g", "run")
	require.Equal(t, Admitted, out)
	for _, n := range []string{"w1", "w2"} {
		_, out := f.submit(t, "g", n)
		require.Equal(t, MustWait, out)
	}
	g, _ := f.r.Lookup("g")
	_, c := f.r.Tune(g, tu, 1, fixedQueue(10))
	require.Len(t, c.Requeued, 2)
	_, held, _ := g.Held()
	assert.Equal(t, 1, held, "only the running task keeps its concurrency permit")
	assert.Equal(t, []string{"w1"}, f.end(t, run), "then they start in order, one at a time")
}

func TestTuneGlobalUnderFairShare(t *testing.T) {
	f := newFixture(t, 2, true, fixed(unlimitedGroup(1)))
	var ks []*tk
	for _, n := range []string{"a1", "b1", "a2", "b2"} {
		k, _ := f.submit(t, n[:1], n)
		ks = append(ks, k)
	}
	assert.Equal(t, 2, f.gl.Running())
	assert.Equal(t, 2, f.gl.RunningCost(), "plain tasks hold one global permit each")
	old, c := f.gl.TuneGlobal(4)
	assert.Equal(t, 2, old)
	assert.ElementsMatch(t, []string{"a2", "b2"}, resume(c.Handed))
	assert.Equal(t, 4, f.gl.Limit())
	_, c = f.gl.TuneGlobal(1)
	assert.Empty(t, c.Handed)
	for _, k := range ks {
		f.end(t, k)
	}
	_, c = f.gl.TuneGlobal(1)
	assert.Nil(t, c)

	off := newFixture(t, 2, false, fixed(unlimitedGroup(1)))
	_, c = off.gl.TuneGlobal(4)
	assert.Nil(t, c, "under IsolationOff the global limit is not tuned")
	assert.Equal(t, 2, off.gl.Limit())
}

// fixedQueue is a queue function of Tune that returns q whatever the limit.
func fixedQueue(q int) func(int) int { return func(int) int { return q } }

// Under fair share a task's release passes its concurrency permit straight
// to its group's next waiter only while the group is within its limit. A
// lowered limit stops it, as it stops a release that gives the permit back.
func TestAReleaseUnderFairSharePassesNoPermitPastALoweredLimit(t *testing.T) {
	tu := &tuning{"g"}
	f := newFixture(t, 2, true, func(key string) Limits {
		if key == "g" {
			return Limits{Concurrency: 2, MaxInFlight: Unlimited, QueueThreshold: 10, Tuning: tu}
		}
		return unlimitedGroup(1)
	})
	next := f.stepping(t)
	a, b := next("g", "a", Admitted), next("g", "b", Admitted)
	next("g", "c", MustWait)      // in g's concurrency line
	x := next("h", "x", MustWait) // in the global line, so a's release hands on
	next("k", "y", MustWait)      // and there after x
	g, _ := f.r.Lookup("g")
	_, c := f.r.Tune(g, tu, 1, fixedQueue(10))
	require.Empty(t, c.Handed)

	assert.Equal(t, []string{"x"}, f.end(t, a))
	_, held, _ := g.Held()
	assert.Equal(t, 1, held, "c waits while g runs at its lowered limit")
	assert.Equal(t, []string{"y"}, f.end(t, b))
	assert.Equal(t, []string{"c"}, f.end(t, x))
}
