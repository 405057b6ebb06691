package groupstate

import (
	"context"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegistryUpdateResolvesEveryGroupAgainAndStartsWaiters(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	f.submit(t, "g", "g1")
	f.submit(t, "g", "g2")
	f.submit(t, "g", "g3")
	admitted := resume(f.r.Update(Unlimited, Unlimited, fixed(Limits{Concurrency: 3, MaxInFlight: Unlimited, QueueThreshold: 5})).Handed)
	assert.Equal(t, []string{"g2", "g3"}, admitted)
	g, _ := f.r.Lookup("g")
	assert.Equal(t, 3, g.Limits().Concurrency)
	assert.Equal(t, 5, g.Limits().QueueThreshold)
	var k tk
	f.r.Enter("new", &k.p, &k, 0)
	k.p.Exit()
	n, _ := f.r.Lookup("new")
	assert.Equal(t, 3, n.Limits().Concurrency, "new groups resolve from the new function")
}

func TestRegistryUpdateGroupResolvesOneGroupAgainAndNotAGoneOne(t *testing.T) {
	conc := map[string]int{"g": 1, "h": 1}
	f := newFixture(t, Unlimited, false, func(key string) Limits {
		return Limits{Concurrency: conc[key], MaxInFlight: Unlimited, QueueThreshold: Unlimited, Answers: Answers{Concurrency: 7}}
	})
	f.submit(t, "g", "g1")
	f.submit(t, "g", "g2")
	f.submit(t, "h", "h1")
	f.submit(t, "h", "h2")
	conc["g"], conc["h"] = 2, 2
	g, _ := f.r.Lookup("g")
	assert.Equal(t, []string{"g2"}, resume(f.r.UpdateGroup(g, func(Limits) Limits { return f.r.resolve("g") }).Handed))
	assert.Equal(t, Limits{Concurrency: 2, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1, Answers: Answers{Concurrency: 7}}, g.Limits())
	h, _ := f.r.Lookup("h")
	assert.Equal(t, 1, h.Limits().Concurrency, "another group keeps its limits")

	evicted := f.r.Evict("h", context.Canceled, nil)
	assert.Len(t, evicted, 1)
	assert.Empty(t, f.r.UpdateGroup(h, func(Limits) Limits { return f.r.resolve("h") }).Handed)
	assert.Equal(t, 1, h.Limits().Concurrency, "an evicted group is not resolved again")
	var k tk
	f.r.Enter("h", &k.p, &k, 0) // a new group of h's key
	assert.Empty(t, f.r.UpdateGroup(h, func(Limits) Limits { return f.r.resolve("h") }).Handed)
	assert.Equal(t, 1, h.Limits().Concurrency, "nor is one whose key has a new group")
	k.p.Exit()
}

func TestRegistryForgetsIdleGroupsOnlyAfterTheTTLAndNeverBusyOnes(t *testing.T) {
	calls := map[string]int{}
	f := newFixture(t, Unlimited, false, func(key string) Limits {
		calls[key]++
		return Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited}
	})
	f.r.SetIdleTTL(10)
	idle, _ := f.submit(t, "idle", "i")
	busy, _ := f.submit(t, "busy", "b")
	f.end(t, idle)
	f.now = 9
	f.r.ForgetIdle()
	assert.Equal(t, 2, f.r.Len(), "not yet a TTL since the last look")
	f.now = 20
	f.r.ForgetIdle()
	assert.Equal(t, 1, f.r.Len())
	_, ok := f.r.Lookup("idle")
	assert.False(t, ok, "idle since 0, forgotten at 20")
	_, ok = f.r.Lookup("busy")
	assert.True(t, ok, "a group with a task is never forgotten")
	f.submit(t, "idle", "i2")
	assert.Equal(t, 2, calls["idle"], "a forgotten group resolves its limits again")
	f.end(t, busy)
}

func TestRegistryGetNeverReturnsAForgottenGroup(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(unlimitedGroup(1)))
	f.r.SetIdleTTL(1)
	g, _ := f.r.get("g", nil)
	g.exit()
	require.True(t, g.refs.CompareAndSwap(0, deadRefs), "forgotten, not yet deleted")
	h, _ := f.r.get("g", nil)
	assert.NotSame(t, g, h)
	h.exit()
}

// TestEnterNeverEntersAGroupGoneFromTheRegistry: the group Enter keeps
// aside (Registry.hot) is not entered once it is evicted or forgotten, even
// if it is still kept aside, as a Enter that found it just before could
// leave it.
func TestEnterNeverEntersAGroupGoneFromTheRegistry(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(unlimitedGroup(1)))
	k, _ := f.submit(t, "g", "a") // at time 0, which keeps the group aside
	g := k.p.group
	require.Same(t, g, f.r.hot.Load())
	f.end(t, k)
	f.r.Evict("g", context.Canceled, nil)
	assert.Nil(t, f.r.hot.Load(), "let go with the group")
	f.r.hot.Store(g)
	k, _ = f.submit(t, "g", "b")
	assert.NotSame(t, g, k.p.group, "evicted")
	assert.False(t, k.p.group.gone())
	f.end(t, k)

	g = k.p.group
	f.r.SetIdleTTL(1)
	f.now = 5
	f.r.ForgetIdle()
	_, ok := f.r.Lookup("g")
	require.False(t, ok, "forgotten")
	f.r.hot.Store(g)
	k, _ = f.submit(t, "g", "c")
	assert.NotSame(t, g, k.p.group, "forgotten")
	f.end(t, k)
}

// The counts a task changes as it waits, starts and ends are not on the
// cache line of scope, nor on those of the first scope's cause and made
// context, which every Submit reads (BenchmarkW1Unlimited and
// BenchmarkW3HotGroup of the benchmarks module, peer groupconc-fair and
// groupconc-user).
func TestGroupLayout(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the layout is planned for 64-bit platforms")
	}
	var g Group[tk]
	line := func(off uintptr) uintptr { return off / 64 }
	read := map[string]uintptr{
		"key":          unsafe.Offsetof(g.key),
		"limits":       unsafe.Offsetof(g.limits),
		"global":       unsafe.Offsetof(g.global),
		"scope":        unsafe.Offsetof(g.scope),
		"scope0.root":  unsafe.Offsetof(g.scope0) + unsafe.Offsetof(g.scope0.root),
		"scope0.cause": unsafe.Offsetof(g.scope0) + unsafe.Offsetof(g.scope0.cause),
		"scope0.made":  unsafe.Offsetof(g.scope0) + unsafe.Offsetof(g.scope0.made),
	}
	for name, off := range map[string]uintptr{
		"refs":          unsafe.Offsetof(g.refs),
		"queue.held":    unsafe.Offsetof(g.queue) + unsafe.Offsetof(g.queue.held),
		"waiting":       unsafe.Offsetof(g.waiting),
		"chain":         unsafe.Offsetof(g.chain),
		"bulkhead.held": unsafe.Offsetof(g.bulkhead) + unsafe.Offsetof(g.bulkhead.held),
		"conc.held":     unsafe.Offsetof(g.conc) + unsafe.Offsetof(g.conc.held),
	} {
		for rname, roff := range read {
			if line(off) == line(roff) {
				t.Errorf("%s shares %s's cache line (offsets %d and %d)", name, rname, off, roff)
			}
		}
	}
}

// TestUpdateWakesBlockedCallersOnceEveryLimitIsInForce: a change of limits
// that raises a group's queue threshold and lowers its bulkhead wakes the
// caller waiting for a slot only once the lowered bulkhead is in force: a
// caller woken before could walk through it under the old limit (FuzzOps
// found two tasks running under a bulkhead lowered to 1 so).
func TestUpdateWakesBlockedCallersOnceEveryLimitIsInForce(t *testing.T) {
	for _, fair := range []bool{false, true} {
		lim := Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: 0, Weight: 1}
		f := newFixture(t, 10, fair, fixed(lim))
		var bulkheadAtWake []int64
		f.gl.SetHooks(func(k *tk) {
			bulkheadAtWake = append(bulkheadAtWake, k.p.group.bulkhead.limit.Load())
		}, func(*tk) {}, func(*tk) bool { return false })
		a1, out := f.submit(t, "a", "a1")
		require.Equal(t, Admitted, out)
		a2 := &tk{name: "a2"}
		f.r.Enter("a", &a2.p, a2, f.now)
		a2.p.Pause(true) // a blocked caller's walk, as the executor's
		seen, _ := a2.p.Nudges()
		out, reason := a2.p.Try()
		require.Equal(t, Rejected, out)
		require.True(t, a2.p.Block(reason, seen), "a2's caller waits for a slot")

		lim.QueueThreshold, lim.MaxInFlight = 1, 1
		f.r.Update(10, Unlimited, fixed(lim))
		require.Equal(t, []int64{1}, bulkheadAtWake, "fair %v: woken once, under the bulkhead of 1", fair)

		a2.p.Unblock()
		a2.p.Release()
		assert.Empty(t, f.end(t, a1))
		g, _ := f.r.Lookup("a")
		requireQuiet(t, f.gl, g)
	}
}

func TestRegistryCountsAGroupOutOnceWhenASubmitAndASweepBothRemoveIt(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	f.r.SetIdleTTL(10)
	k, _ := f.submit(t, "a", "k")
	f.end(t, k)
	f.now += 20
	g, _ := f.r.Lookup("a")
	// A sweep marks g forgotten; before it deletes g, a Submit finds it
	// forgotten, deletes it and makes a new one.
	require.True(t, g.refs.CompareAndSwap(0, deadRefs))
	var n tk
	f.r.Enter("a", &n.p, &n, f.now)
	f.r.remove(g) // the sweep's delete: g is gone already
	n.p.Exit()
	groups := 0
	f.r.Range(func(*Group[tk]) bool { groups++; return true })
	assert.Equal(t, groups, f.r.Len(), "Len against the groups Range yields")
}
