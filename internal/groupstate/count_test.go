package groupstate

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTallyCountsAgainstItsLimit: a tally takes permits up to its limit,
// gives them back, and reads what it holds, also near the largest limit.
// Under Unlimited it takes any number.
func TestTallyCountsAgainstItsLimit(t *testing.T) {
	var c tally
	for range 5 {
		require.True(t, c.take(5))
	}
	assert.False(t, c.take(5), "5 held against a limit of 5")
	assert.False(t, c.takeN(2, 6), "5 held, 2 more against a limit of 6")
	assert.EqualValues(t, 5, c.load())
	c.giveN(5)
	assert.EqualValues(t, 0, c.load())

	const huge = Unlimited - 1 // the sum of what is held and asked overflows
	require.True(t, c.takeN(huge, huge))
	assert.False(t, c.takeN(2, huge), "a take past a huge limit")
	c.giveN(huge)

	require.True(t, c.takeN(Unlimited, Unlimited))
	assert.True(t, c.take(Unlimited), "a take under Unlimited is refused")
	c.giveN(Unlimited)
	c.give()
	assert.EqualValues(t, 0, c.load())
}

// TestTallyNeverPassesItsLimit: goroutines take and give permits; no more
// than the limit are ever held at once, and none is lost.
func TestTallyNeverPassesItsLimit(t *testing.T) {
	const limit, workers, rounds = 2, 4, 2000
	var c tally
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
