package groupstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Under fair share a parent's bulkhead serves its children fairly, as its
// concurrency layer does: a3 of p/a waits ahead of b1 of p/b, but p/a
// holds one of p's two bulkhead permits and p/b none, so b1 goes first.
func TestAParentsBulkheadServesItsChildrenFairly(t *testing.T) {
	f := parentFixture(t, Unlimited, true, "p",
		Limits{Concurrency: Unlimited, MaxInFlight: 2, QueueThreshold: Unlimited, Weight: 1},
		Limits{Concurrency: Unlimited, MaxInFlight: Unlimited, QueueThreshold: Unlimited, Weight: 1})
	submit := f.stepping(t)
	a1 := submit("p/a", "a1", Admitted)
	a2 := submit("p/a", "a2", Admitted)
	a3 := submit("p/a", "a3", MustWait)
	b1 := submit("p/b", "b1", MustWait)
	assert.Equal(t, []string{"b1"}, f.end(t, a1))
	assert.Equal(t, []string{"a3"}, f.end(t, a2))
	f.end(t, a3)
	f.end(t, b1)
	f.requireQuietKeys(t, "p", "p/a", "p/b")
}
