package groupstate

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTallyWidensKeepingThePermitsHeld: a count widened with permits held
// goes on from them, against the same limit.
func TestTallyWidensKeepingThePermitsHeld(t *testing.T) {
	var c tally
	for range 3 {
		require.True(t, c.take(5))
	}
	c.widen()
	require.NotNil(t, c.wide.Load())
	assert.EqualValues(t, 3, c.load())
	assert.True(t, c.take(5))
	assert.True(t, c.take(5))
	assert.False(t, c.take(5), "5 held against a limit of 5")
	for range 5 {
		c.give()
	}
	assert.EqualValues(t, 0, c.load())
	c.widen() // a second time changes nothing
	assert.EqualValues(t, 0, c.load())
}

// TestTallyWidenedWhileInUseNeverPassesItsLimit: goroutines take and give
// permits while the count widens under them; no more than the limit are
// ever held at once, and none is lost.
func TestTallyWidenedWhileInUseNeverPassesItsLimit(t *testing.T) {
	const limit, workers, rounds = 2, 4, 2000
	for range 20 {
		var c tally
		var held, most atomic.Int64
		var wg sync.WaitGroup
		for i := range workers {
			wg.Go(func() {
				for r := range rounds {
					if i == 0 && r == rounds/2 {
						c.widen()
					}
					if !c.take(limit) {
						continue
					}
					n := held.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					held.Add(-1)
					c.give()
				}
			})
		}
		wg.Wait()
		require.LessOrEqual(t, most.Load(), int64(limit))
		require.EqualValues(t, 0, c.load(), "a permit was lost or given twice")
		require.NotNil(t, c.wide.Load())
	}
}

// TestGroupCountsWidenOnceATaskWaits: a group's counts stay one word each
// while its tasks start at once, and widen once one waits at its layers,
// keeping what they count; on one processor they stay narrow. GOMAXPROCS
// changes while the registry lives, as Go changes it with a container's
// CPU limit: each group follows the value when it was made.
func TestGroupCountsWidenOnceATaskWaits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, fair := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "fair"}[fair], func(t *testing.T) {
			runtime.GOMAXPROCS(1)
			f := newFixture(t, Unlimited, fair, fixed(Limits{Concurrency: 1, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
			runtime.GOMAXPROCS(2) // after the registry was made
			a, out := f.submit(t, "g", "a")
			require.Equal(t, Admitted, out)
			g, _ := f.r.Lookup("g")
			assert.Nil(t, g.conc.held.wide.Load(), "nothing waited")
			b, out := f.submit(t, "g", "b")
			require.Equal(t, MustWait, out)
			for _, c := range []*tally{&g.queue.held, &g.bulkhead.held, &g.conc.held} {
				assert.NotNil(t, c.wide.Load())
			}
			bulkhead, conc, slots := g.Held()
			assert.Equal(t, [3]int{2, 1, 1}, [3]int{bulkhead, conc, slots})
			assert.Equal(t, []string{"b"}, f.end(t, a))
			assert.Empty(t, f.end(t, b))
			requireQuiet(t, f.gl, g)

			runtime.GOMAXPROCS(1)
			c, _ := f.submit(t, "h", "c")
			d, out := f.submit(t, "h", "d")
			require.Equal(t, MustWait, out)
			h, _ := f.r.Lookup("h")
			assert.Nil(t, h.conc.held.wide.Load(), "one processor")
			assert.Equal(t, []string{"d"}, f.end(t, c))
			assert.Empty(t, f.end(t, d))
			requireQuiet(t, f.gl, h)
		})
	}
}
