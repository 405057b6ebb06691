package groupstate

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTallyCountsAgainstItsLimitNarrowAndWide: either form takes permits up
// to its limit, gives them back, and reads what it holds.
func TestTallyCountsAgainstItsLimitNarrowAndWide(t *testing.T) {
	for _, wide := range []bool{false, true} {
		var c tally
		if wide {
			c.widen()
		}
		for range 5 {
			require.True(t, c.take(5))
		}
		assert.False(t, c.take(5), "5 held against a limit of 5")
		assert.EqualValues(t, 5, c.load())
		for range 5 {
			c.give()
		}
		assert.EqualValues(t, 0, c.load())
	}
}

// TestTallyNeverPassesItsLimit: goroutines take and give permits; no more
// than the limit are ever held at once, and none is lost.
func TestTallyNeverPassesItsLimit(t *testing.T) {
	const limit, workers, rounds = 2, 4, 2000
	for _, wide := range []bool{false, true} {
		var c tally
		if wide {
			c.widen()
		}
		var held, most atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range rounds {
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
	}
}
