package groupstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func unlimitedGroup(weight int) Limits {
	return Limits{Concurrency: Unlimited, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: weight}
}

// TestFairLineGivesAFreedPermitToTheGroupWithFewestRunning: a heavy group
// that queued first does not keep a light group waiting.
func TestFairLineGivesAFreedPermitToTheGroupWithFewestRunning(t *testing.T) {
	f := newFixture(t, 2, true, fixed(unlimitedGroup(1)))
	a1, out := f.submit(t, "a", "a1")
	require.Equal(t, Admitted, out)
	a2, out := f.submit(t, "a", "a2")
	require.Equal(t, Admitted, out)
	for _, n := range []string{"a3", "a4", "a5"} {
		_, out := f.submit(t, "a", n)
		require.Equal(t, MustWait, out)
	}
	_, out = f.submit(t, "b", "b1")
	require.Equal(t, MustWait, out)
	assert.Equal(t, []string{"b1"}, f.end(t, a1), "b runs 0, a runs 1")
	assert.Equal(t, []string{"a3"}, f.end(t, a2), "both run 1: the oldest head, a3, wins the tie")
}

// TestFairLineSharesByWeight: with weights 2 and 1, a backlogged pair of
// groups is served two to one.
func TestFairLineSharesByWeight(t *testing.T) {
	f := newFixture(t, 3, true, func(key string) Limits {
		return unlimitedGroup(map[string]int{"heavy": 2, "light": 1}[key])
	})
	var running []*tk
	for range 3 {
		k, out := f.submit(t, "x", "x")
		require.Equal(t, Admitted, out)
		running = append(running, k)
	}
	for range 6 {
		_, out := f.submit(t, "light", "light")
		require.Equal(t, MustWait, out)
		_, out = f.submit(t, "heavy", "heavy")
		require.Equal(t, MustWait, out)
	}
	var started []string
	for _, k := range running {
		started = append(started, f.end(t, k)...)
	}
	// Freed one at a time: light 0/1 and heavy 0/2 tie, light joined first;
	// then heavy 0/2 < light 1/1; then heavy 1/2 < light 1/1.
	assert.Equal(t, []string{"light", "heavy", "heavy"}, started)
}

func TestFairLineLeaveAndSweepKeepTheHeapConsistent(t *testing.T) {
	f := newFixture(t, 1, true, fixed(unlimitedGroup(1)))
	holder, out := f.submit(t, "x", "x")
	require.Equal(t, Admitted, out)
	a1, _ := f.submit(t, "a", "a1")
	b1, _ := f.submit(t, "b", "b1")
	c1, _ := f.submit(t, "c", "c1")
	require.True(t, a1.p.Leave())
	assert.False(t, a1.p.Leave())
	a1.p.Release()
	gb, _ := f.r.Lookup("b")
	assert.Equal(t, []*tk{b1}, f.gl.sweep(func(p *Permits[tk]) bool { return p.group == gb }, nil))
	b1.p.Release()
	assert.Equal(t, []string{"c1"}, f.end(t, holder))
	assert.Empty(t, f.end(t, c1))
	ga, _ := f.r.Lookup("a")
	gc, _ := f.r.Lookup("c")
	requireQuiet(t, f.gl, ga, gb, gc)
}

func TestFairLineRaisedLimitServesGroupsFairly(t *testing.T) {
	f := newFixture(t, 1, true, fixed(unlimitedGroup(1)))
	holder, _ := f.submit(t, "a", "a0")
	for _, n := range []string{"a1", "a2"} {
		f.submit(t, "a", n)
	}
	f.submit(t, "b", "b1")
	assert.Equal(t, []string{"b1", "a1"}, resume(f.gl.SetLimits(3, Unlimited, nil)))
	f.end(t, holder)
}
