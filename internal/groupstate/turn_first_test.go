package groupstate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAFreshWalkJoinsTheFirstLayersLineWhileItsGroupWalks: under
// IsolationOff the global layer is the walk's first. w and m of g are
// handed global permits, and their walks are yet to go on, when f of g
// comes to the global line and finds v waiting there. No task of g can
// come to that layer after f, so f takes its place in the line at once,
// rather than waiting for g's turn. u, of another group, comes after f
// and starts after it.
func TestAFreshWalkJoinsTheFirstLayersLineWhileItsGroupWalks(t *testing.T) {
	f := newFixture(t, 3, false, fixed(Limits{Concurrency: 2, MaxInFlight: Unlimited, QueueThreshold: Unlimited}))
	others := f.admitAll(t, "x", "y", "z")
	next := f.stepping(t)
	w, m := next("g", "w", MustWait), next("g", "m", MustWait)
	next("v", "v", MustWait)
	require.Equal(t, [][]*tk{{w}, nil}, handedBy(others[:2]...), "m waits for its turn")
	fresh := next("g", "f", MustWait)
	next("u", "u", MustWait)

	assert.Equal(t, []string{"w", "m"}, resume([]*tk{w}))
	assert.Equal(t, []string{"v"}, f.end(t, others[2]))
	assert.Equal(t, []string{"f"}, f.end(t, w), "f joined the global line before u")
	assert.Equal(t, []string{"u"}, f.end(t, m))
	assert.Empty(t, f.end(t, fresh))
}

// TestTurnsAreMadeOnceForTwoAskingAtOnce: a group's turns are made on
// first need. Two tasks handed permits at once must share them, or both
// would walk on at once.
func TestTurnsAreMadeOnceForTwoAskingAtOnce(t *testing.T) {
	for range 2000 {
		var g Group[tk]
		start, got := make(chan struct{}), make(chan *turns[tk], 2)
		for range 2 {
			go func() {
				<-start
				got <- g.turn()
			}()
		}
		close(start)
		require.Same(t, <-got, <-got)
	}
}
