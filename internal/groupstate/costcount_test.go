package groupstate

import (
	"fmt"
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
