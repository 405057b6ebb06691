package groupstate

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A creation that would wait for itself, through the parents' creations,
// fails instead: "a" is made, and needs "b" made, which needs "a". The
// error is cycle's, given the keys back to the one that would wait, or a
// plain one where no cycle was set.
func TestCreationsRefuseAWaitForItself(t *testing.T) {
	for _, cycle := range []func(string, []string) error{nil, func(key string, chain []string) error {
		return fmt.Errorf("%s: %v", key, chain)
	}} {
		var c creations[tk]
		var err error
		c.do("a", nil, func(_ string, a *creation[tk]) (*Group[tk], error) {
			c.do("b", a, func(_ string, b *creation[tk]) (*Group[tk], error) {
				w := c.do("a", b, nil, cycle)
				require.True(t, w.returned)
				err = w.err
				return nil, w.err
			}, cycle)
			return nil, nil
		}, cycle)
		if cycle == nil {
			assert.ErrorContains(t, err, "a cycle of parents")
		} else {
			assert.EqualError(t, err, "b: [a b]")
		}
	}
}

// A parent evicted between its child's creation counting it and adopting
// the child is counted out again, and the child goes under the key's next
// group. Otherwise the evicted parent would keep its own parent busy.
func TestRegistryCountsOutAParentEvictedAsItsChildIsMade(t *testing.T) {
	var f *fixture
	evicted := false
	f = newFixture(t, Unlimited, false, func(key string) Limits {
		if key == "g/p/a" && !evicted {
			evicted = true
			f.r.Evict("g/p", context.Canceled, nil)
		}
		return Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited}
	})
	f.r.SetParents(pathParents, nil)
	var k tk
	_, err := f.r.Enter("g/p", &k.p, &k, 0)
	require.NoError(t, err)
	k.p.Exit()
	old, _ := f.r.Lookup("g/p")

	a, err := f.r.Enter("g/p/a", &k.p, &k, 0)
	require.NoError(t, err)
	require.True(t, evicted)
	assert.NotSame(t, old, a.Parent())
	assert.Zero(t, old.refs.Load(), "the evicted parent counts nothing")
	g, _ := f.r.Lookup("g")
	assert.Equal(t, int64(1), g.refs.Load(), "g counts its one child remembered")
	k.p.Exit()
}

// A creation that finds its key's group made meanwhile, by a caller that
// looked it up as this one did, returns that group and counts out the
// parent it counted in. Otherwise the parent would never be idle.
func TestRegistryCreationThatFindsItsGroupMadeCountsOutTheParent(t *testing.T) {
	f := treeFixture(t)
	k, _ := f.submit(t, "p/a", "a1")
	f.end(t, k)
	made, _ := f.r.Lookup("p/a")
	parent, err := f.r.get("p", nil) // as create does before it makes p/a
	require.NoError(t, err)
	assert.Same(t, made, f.r.createUnder("p/a", parent))
	assert.Equal(t, int64(1), parent.refs.Load(), "p counts its one child remembered")
}
