package groupstate

import (
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
