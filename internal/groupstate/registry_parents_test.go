package groupstate

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// treeFixture is a fixture whose keys "p/x" have the parent "p".
func treeFixture(t *testing.T) *fixture {
	f := newFixture(t, Unlimited, false, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	f.r.SetParents(slashParents, nil)
	return f
}

// parentFixture is a fixture of global cap global, in fair share or not,
// whose keys "p/x" have the parent "p". The key parent has the limits top,
// and every other key rest.
func parentFixture(t *testing.T, global int, fair bool, parent string, top, rest Limits) *fixture {
	f := newFixture(t, global, fair, func(key string) Limits {
		if key == parent {
			return top
		}
		return rest
	})
	f.r.SetParents(slashParents, nil)
	return f
}

// slashParents gives a key "p/x" the parent "p".
func slashParents(key string) ([]string, error) {
	if p, _, ok := strings.Cut(key, "/"); ok {
		return []string{p}, nil
	}
	return nil, nil
}

// pathParents gives a key "p/a/x" the parent "p/a", and so on up.
func pathParents(key string) ([]string, error) {
	if i := strings.LastIndex(key, "/"); i >= 0 {
		return []string{key[:i]}, nil
	}
	return nil, nil
}

// prefixParents gives a key "aaa" the parent "aa", and so on up.
func prefixParents(key string) ([]string, error) {
	if len(key) <= 1 {
		return nil, nil
	}
	return []string{key[:len(key)-1]}, nil
}

// children returns the keys of g's children.
func children(g *Group[tk]) []string {
	var keys []string
	k := g.kin.Load()
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.children {
		keys = append(keys, c.key)
	}
	return keys
}

// A group forgotten as idle may be evicted before ForgetIdle deletes it.
// It leaves its parent once: its sibling stays listed, and the parent
// counts it out once (found by the storm with parents: a second leave
// took a sibling off, or indexed -1).
func TestRegistryGroupLeavesItsParentOnceWhoeverRemovesIt(t *testing.T) {
	f := treeFixture(t)
	a, _ := f.submit(t, "p/a", "a1")
	b, _ := f.submit(t, "p/b", "b1")
	f.end(t, a)
	f.end(t, b)
	p, _ := f.r.Lookup("p")
	ga, _ := f.r.Lookup("p/a")
	require.Equal(t, int64(2), p.refs.Load(), "a parent counts each child remembered")

	require.True(t, ga.refs.CompareAndSwap(0, deadRefs), "ForgetIdle finds p/a idle")
	f.r.Evict("p/a", context.Canceled, nil)
	assert.False(t, f.r.remove(ga), "ForgetIdle's delete comes second")
	f.r.remove(ga) // and a Submit that found it forgotten
	assert.Equal(t, []string{"p/b"}, children(p))
	assert.Equal(t, int64(1), p.refs.Load())
}

// A child evicted while a Hold keeps it is counted out of its parent at
// Unhold, as at its last task's end. Otherwise the parent would never be
// idle.
func TestUnholdCountsAnEvictedChildOutOfItsParent(t *testing.T) {
	f := treeFixture(t)
	a, _ := f.submit(t, "p/a", "a1")
	f.end(t, a)
	p, _ := f.r.Lookup("p")
	ga, _ := f.r.Lookup("p/a")
	require.True(t, ga.Hold())
	f.r.Evict("p/a", context.Canceled, nil)
	require.Equal(t, int64(1), p.refs.Load(), "p/a is held")
	ga.Unhold()
	assert.Zero(t, p.refs.Load(), "p counts no child")
}

// A child made while its parent is evicted does not stay under the
// evicted parent, where no eviction, change of policy or stats would find
// it. It goes under the parent's key's next group.
func TestRegistryChildMadeAsItsParentIsEvictedGoesUnderTheNewParent(t *testing.T) {
	f := treeFixture(t)
	old, err := f.r.get("p", nil) // as create does before it makes p/a
	require.NoError(t, err)
	f.r.Evict("p", context.Canceled, nil)
	assert.Nil(t, f.r.createUnder("p/a", old), "an evicted parent adopts no child")
	old.exit()

	var k tk
	g, err := f.r.Enter("p/a", &k.p, &k, 0)
	require.NoError(t, err)
	now, _ := f.r.Lookup("p")
	assert.NotSame(t, old, now)
	assert.Same(t, now, g.Parent())
	assert.Equal(t, []string{"p/a"}, children(now))
	k.p.Exit()
}

// A parent's line holds its subtree's tasks in the order they arrived. A
// task held at an earlier layer (the global cap, a blocked caller's queue)
// arrives after younger ones: here a is stamped before c but arrives after
// it. The parent's oldest own task is found wherever it stands (found by a
// probe's random rounds: a parent read 0 s for its task of 6 s).
func TestOldestWaitOfAParentLooksPastItsSubtreesTasks(t *testing.T) {
	f := treeFixture(t) // every group's limit is 1
	submit := f.extended()
	r, out := submit("p/r", "r")
	require.Equal(t, Admitted, out) // holds p's permit
	f.now = 20
	c, out := submit("p/c", "c")
	require.Equal(t, MustWait, out)
	f.now = 10
	a, out := submit("p", "a")
	require.Equal(t, MustWait, out)
	p, _ := f.r.Lookup("p")
	assert.EqualValues(t, 90, p.OldestWait(100), "a waits since 10")
	assert.Equal(t, []string{"c"}, f.end(t, r))
	assert.Equal(t, []string{"a"}, f.end(t, c))
	assert.Empty(t, f.end(t, a))
	assert.Zero(t, p.OldestWait(100))
}

// A group whose path is more than MaxAncestors deep is refused with an
// error, also where no tooDeep was set. Its ancestors are made first, up
// to the deepest allowed.
func TestRegistryRefusesAPathTooDeepWithNoErrorSet(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	f.r.SetParents(prefixParents, nil)
	deepest := strings.Repeat("a", MaxAncestors+1)
	var k tk
	_, err := f.r.Enter(deepest+"a", &k.p, &k, 0)
	require.ErrorContains(t, err, "more than MaxAncestors ancestors")
	g, err := f.r.Enter(deepest, &k.p, &k, 0)
	require.NoError(t, err)
	assert.Equal(t, uint8(MaxAncestors), g.depth())
	k.p.Exit()
	assert.Zero(t, g.refs.Load(), "the child refused left no count in its parent")
}

// descendants lists each group under g once, parents before their
// children. Evict, Shutdown, a pause and a lowered limit go through it.
func TestRegistryListsEachDescendantOnce(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	f.r.SetParents(pathParents, nil)
	for _, key := range []string{"p/a/x", "p/b", "p/a/y"} {
		var k tk
		_, err := f.r.Enter(key, &k.p, &k, 0)
		require.NoError(t, err)
		k.p.Exit()
	}
	p, _ := f.r.Lookup("p")
	var keys []string
	for _, d := range f.r.descendants(p) {
		keys = append(keys, d.key)
	}
	require.ElementsMatch(t, []string{"p/a", "p/b", "p/a/x", "p/a/y"}, keys)
	a := slices.Index(keys, "p/a")
	assert.Less(t, a, slices.Index(keys, "p/a/x"), "a parent before its children")
	assert.Less(t, a, slices.Index(keys, "p/a/y"), "a parent before its children")
}

// Departed lists a child evicted while its task runs until that task is
// over, and then no more.
func TestRegistryDepartedForgetsAChildOnceItsTasksAreOver(t *testing.T) {
	f := treeFixture(t)
	a, out := f.submit(t, "p/a", "a")
	require.Equal(t, Admitted, out)
	p, _ := f.r.Lookup("p")
	ga, _ := f.r.Lookup("p/a")
	f.r.Evict("p/a", context.Canceled, nil)
	assert.Equal(t, []*Group[tk]{ga}, f.r.Departed(p), "a still runs")
	f.end(t, a)
	assert.Empty(t, f.r.Departed(p))
}

// A child that leaves is taken off its parent's children wherever it
// stands among them, and the others stay.
func TestRegistryTakesOffTheChildThatLeavesWhereverItStands(t *testing.T) {
	f := treeFixture(t)
	for _, key := range []string{"p/a", "p/b", "p/c", "p/d"} {
		k, _ := f.submit(t, key, key)
		f.end(t, k)
	}
	p, _ := f.r.Lookup("p")
	for _, v := range []struct {
		key  string
		left []string
	}{
		{"p/b", []string{"p/a", "p/c", "p/d"}},
		{"p/c", []string{"p/a", "p/d"}},
		{"p/d", []string{"p/a"}},
		{"p/a", nil},
	} {
		f.r.Evict(v.key, context.Canceled, nil)
		assert.ElementsMatch(t, v.left, children(p), "after %s left", v.key)
	}
}
