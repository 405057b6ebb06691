package groupstate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestACostlyTaskSentBackByALoweredBulkheadIsInFlightNoMore: w of cost 2
// holds 2 of g's bulkhead permits and waits for g's concurrency permit,
// which r holds. The bulkhead is lowered to 1, which sends w back to wait
// for it. w is in flight no more: g counts r alone, not r less w's second
// permit.
func TestACostlyTaskSentBackByALoweredBulkheadIsInFlightNoMore(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprint("fair=", fair), func(t *testing.T) {
			bulk := 4
			limits := func(string) Limits {
				return Limits{Concurrency: 1, MaxInFlight: bulk, QueueThreshold: Unlimited, Weight: 1}
			}
			f := newFixture(t, Unlimited, fair, limits)
			try := f.costing()
			r, out := try("g", "r", 1)
			require.Equal(t, Admitted, out)
			w, out := try("g", "w", 2)
			require.Equal(t, MustWait, out)
			g, _ := f.r.Lookup("g")
			_, _, inFlight := g.Counts()
			require.Equal(t, 2, inFlight, "r and w, which holds 2 permits")

			bulk = 1
			assert.Empty(t, f.r.Update(Unlimited, Unlimited, limits).Handed)
			running, waiting, inFlight := g.Counts()
			assert.Equal(t, []int{1, 1, 1}, []int{running, waiting, inFlight}, "running, waiting, in flight")
			assert.Equal(t, []string{"w"}, f.end(t, r), "w takes the whole bulkhead")
			_, _, inFlight = g.Counts()
			assert.Equal(t, 1, inFlight)
			assert.Empty(t, f.end(t, w))
			requireQuiet(t, f.gl, g)
		})
	}
}

// A costly task keeps what it took at each layer apart. c of cost 3 takes
// the whole of a limit of 2, g's concurrency or the global cap, and 3 at
// the other layer. It gives back as much of each: w starts after it.
func TestACostlyTaskGivesBackWhatItTookAtEachLayer(t *testing.T) {
	for _, fair := range []bool{false, true} {
		for _, lim := range [][2]int{{5, 2}, {2, 5}} { // global, concurrency
			t.Run(fmt.Sprint("fair=", fair, " limits=", lim), func(t *testing.T) {
				f := newFixture(t, lim[0], fair, fixed(Limits{Concurrency: lim[1], MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1}))
				try := f.costing()
				c, out := try("g", "c", 3)
				require.Equal(t, Admitted, out)
				w, out := try("g", "w", 2)
				require.Equal(t, MustWait, out)
				assert.Equal(t, []string{"w"}, f.end(t, c))
				assert.Empty(t, f.end(t, w))
				f.requireQuietKeys(t, "g")
			})
		}
	}
}

// A costly task of a group MaxAncestors deep takes the whole limit of
// each ancestor's layers, and gives each back.
func TestACostlyTaskOfTheDeepestGroupTakesEachAncestorsLayers(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprint("fair=", fair), func(t *testing.T) {
			f := newFixture(t, Unlimited, fair, fixed(Limits{Concurrency: 1, MaxInFlight: 1, QueueThreshold: Unlimited, Weight: 1}))
			f.r.SetParents(prefixParents, nil)
			try := f.costing()
			deepest := strings.Repeat("a", MaxAncestors+1)
			c, out := try(deepest, "c", 2)
			require.Equal(t, Admitted, out)
			w, out := try("a", "w", 1)
			require.Equal(t, MustWait, out, "c holds a's whole limits")
			assert.Equal(t, []string{"w"}, f.end(t, c))
			f.end(t, w)
			var keys []string
			for i := range MaxAncestors + 1 {
				keys = append(keys, deepest[:i+1])
			}
			f.requireQuietKeys(t, keys...)
		})
	}
}

// A costly task that holds the whole of a limit, topped up by a raise,
// counts what the raise added in fair share's counts too. The global
// cap's go in its group's running, a parent's in its child's share. It gives
// all of it back.
func TestARaiseAddsToTheSharesOfATaskHoldingAWholeLimit(t *testing.T) {
	for _, layer := range []string{"global", "parent"} {
		t.Run(layer, func(t *testing.T) {
			global, parent := 2, 2
			limits := func(key string) Limits {
				l := Limits{Concurrency: Unlimited, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1}
				if key == "p" {
					l.Concurrency = parent
				}
				return l
			}
			f := newFixture(t, Unlimited, true, limits)
			f.r.Update(global, Unlimited, limits)
			f.r.SetParents(slashParents, nil)
			try := f.costing()
			key := "g"
			if layer == "parent" {
				key = "p/c"
				global = Unlimited
				f.r.Update(global, Unlimited, limits)
			}
			c, out := try(key, "c", 3)
			require.Equal(t, Admitted, out)
			if layer == "global" {
				global = 5
			} else {
				parent = 5
			}
			f.r.Update(global, Unlimited, limits)
			g, _ := f.r.Lookup(key)
			if layer == "global" {
				assert.Equal(t, int64(3), g.fair.running.Load(), "running in global permits")
				assert.Equal(t, int64(1), f.gl.running(g), "running in tasks")
			} else {
				assert.Equal(t, int64(3), g.kin.Load().held[1].Load(), "its share of p's limit")
			}
			f.end(t, c)
			keys := []string{key}
			if layer == "parent" {
				keys = append(keys, "p")
			}
			f.requireQuietKeys(t, keys...)
		})
	}
}
