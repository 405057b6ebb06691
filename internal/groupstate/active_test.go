package groupstate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// activeKeys returns the keys RangeActive yields, which sweeps the list.
func activeKeys(r *Registry[tk]) []string {
	var keys []string
	r.RangeActive(func(g *Group[tk]) bool {
		keys = append(keys, g.key)
		return true
	})
	return keys
}

// listed returns how long r's active list is, idle groups not yet swept
// included.
func listed(r *Registry[tk]) int {
	r.active.mu.Lock()
	defer r.active.mu.Unlock()
	return len(r.active.groups)
}

func TestActiveListHoldsAGroupWhileItHasATaskAndDropsItOnceIdle(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	a1, _ := f.submit(t, "a", "a1")
	a2, _ := f.submit(t, "a", "a2") // waits
	b1, _ := f.submit(t, "b", "b1")
	assert.ElementsMatch(t, []string{"a", "b"}, activeKeys(f.r))
	assert.Equal(t, 2, listed(f.r), "a group is listed once, however many tasks it has")

	f.end(t, b1)
	assert.Equal(t, []string{"a"}, activeKeys(f.r), "b is idle")
	assert.Equal(t, 1, listed(f.r), "the sweep dropped b")
	assert.Equal(t, []string{"a2"}, f.end(t, a1))
	assert.Equal(t, []string{"a"}, activeKeys(f.r), "a2 runs")
	f.end(t, a2)
	assert.Empty(t, activeKeys(f.r))
	assert.Equal(t, 2, f.r.Len(), "idle groups stay remembered")

	b2, _ := f.submit(t, "b", "b2")
	assert.Equal(t, []string{"b"}, activeKeys(f.r), "an idle group joins again on its next task")
	f.end(t, b2)
}

func TestActiveListHoldsAPausedGroupWithNoTask(t *testing.T) {
	paused := false
	f := newFixture(t, Unlimited, false, func(string) Limits {
		l := unlimitedGroup(1)
		l.Paused = paused
		return l
	})
	k, _ := f.submit(t, "a", "a1")
	f.end(t, k)
	require.Empty(t, activeKeys(f.r))

	paused = true
	f.r.Update(Unlimited, Unlimited, f.r.resolve)
	assert.Equal(t, []string{"a"}, activeKeys(f.r), "paused, with no task")
	k, _ = f.submit(t, "new", "n1")
	f.end(t, k)
	assert.ElementsMatch(t, []string{"a", "new"}, activeKeys(f.r), "made paused")

	paused = false
	f.r.Update(Unlimited, Unlimited, f.r.resolve)
	assert.Empty(t, activeKeys(f.r), "resumed and idle")
}

func TestActiveListDropsEvictedAndForgottenGroups(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(unlimitedGroup(1)))
	f.r.SetIdleTTL(10)
	running, _ := f.submit(t, "evicted", "e1")
	idle, _ := f.submit(t, "forgotten", "f1")
	f.end(t, idle)
	f.r.Evict("evicted", context.Canceled, nil)
	assert.Empty(t, activeKeys(f.r), "an evicted group leaves, though its task still runs")
	assert.Zero(t, listed(f.r))

	k, _ := f.submit(t, "evicted", "e2")
	assert.Equal(t, []string{"evicted"}, activeKeys(f.r), "the key's new group")
	f.end(t, k)
	f.end(t, running)
	assert.Empty(t, activeKeys(f.r), "the old group never joins again")

	k, _ = f.submit(t, "forgotten", "f2")
	f.end(t, k)
	f.now = 20
	f.r.ForgetIdle()
	_, ok := f.r.Lookup("forgotten")
	require.False(t, ok)
	assert.Empty(t, activeKeys(f.r))
}

// With no snapshot ever taken, the list still stays within twice the
// active groups plus minSweep, while groups come and go by the thousand.
// Two are active at most: the one held and the one just entered.
func TestActiveListStaysBoundedWithoutSnapshots(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(unlimitedGroup(1)))
	f.r.SetIdleTTL(1)
	hold, _ := f.submit(t, "held", "h")
	for i := range 3000 {
		k, _ := f.submit(t, fmt.Sprint("g", i), "t")
		f.end(t, k)
		if i%100 == 0 {
			f.now++
			f.r.ForgetIdle()
		}
		require.Less(t, listed(f.r), 2*2+minSweep)
	}
	f.end(t, hold)
}

// Tasks enter and leave groups while snapshots sweep the list. A group
// holding a task throughout a snapshot is always in it, and no group is
// ever listed twice.
func TestActiveListNeverLosesAnActiveGroupToASweep(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(unlimitedGroup(1)))
	const groups, workers = 8, 4
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				k := &tk{}
				f.r.Enter(fmt.Sprint("g", (i+w)%groups), &k.p, k, 0)
				k.p.Exit()
			}
		})
	}
	held := &tk{}
	f.r.Enter("held", &held.p, held, 0)
	for range 2000 {
		seen := map[string]int{}
		f.r.RangeActive(func(g *Group[tk]) bool {
			seen[g.key]++
			return true
		})
		require.Equal(t, 1, seen["held"], "the group holding a task, once")
		for key, n := range seen {
			require.Equal(t, 1, n, "group %s listed %d times", key, n)
		}
	}
	stop.Store(true)
	wg.Wait()
	held.p.Exit()
	assert.Empty(t, activeKeys(f.r), "every group idle at the end")
}

// A task that enters a group as a sweep cleared its flag, and reads the
// flag only once the sweep set it back, is the sweep's to keep: the group
// is listed once, and no join lists it again (see sweepLocked). The hook
// adds the task's ref there. The rest of Group.enter comes after.
func TestActiveListKeepsAGroupEnteredAsASweepClearsItsFlag(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(unlimitedGroup(1)))
	a, _ := f.submit(t, "a", "a1")
	f.end(t, a) // a is idle, listed until a sweep
	g, _ := f.r.Lookup("a")
	testHookSweepCleared = func(x any) {
		if x == g {
			g.refs.Add(1) // a task's ref, before it reads the flag
		}
	}
	t.Cleanup(func() { testHookSweepCleared = nil })
	assert.Equal(t, []string{"a"}, activeKeys(f.r), "the sweep saw the ref and kept a")
	testHookSweepCleared = nil
	if !g.listed.Load() { // the task reads the flag, as enter does
		f.r.active.join(g)
	}
	assert.Equal(t, []string{"a"}, activeKeys(f.r), "a listed once")
	g.refs.Add(-1)
	assert.Empty(t, activeKeys(f.r))
}

// A parent with a task of its own is never idle, though a child is made,
// or let go, between idle's reads of its refs and of its children's.
func TestAParentWithATaskIsNotIdleAsAChildComesOrGoes(t *testing.T) {
	f := parentFixture(t, Unlimited, false, "t", unlimitedGroup(1), unlimitedGroup(1))
	own, _ := f.submit(t, "t", "own")
	x, _ := f.submit(t, "t/x", "x")
	f.end(t, x) // t/x stays remembered, holding a ref of t's
	g, _ := f.r.Lookup("t")
	var y *tk
	testHookIdle = func() {
		testHookIdle = nil
		y, _ = f.submit(t, "t/y", "y") // makes t/y, a child of t
	}
	t.Cleanup(func() { testHookIdle = nil })
	assert.False(t, g.idle(), "a child made between the reads")
	testHookIdle = func() {
		testHookIdle = nil
		f.r.Evict("t/x", nil, nil)
	}
	assert.False(t, g.idle(), "a child let go between the reads")
	f.end(t, y)
	f.end(t, own)
	assert.True(t, g.idle(), "its children's refs alone")
}
