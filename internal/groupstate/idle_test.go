package groupstate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ForgetIdle looks at most once per TTL, since Submit calls it every time.
// It looks again once a TTL has passed, and forgets the groups idle for the
// TTL or longer. A forgotten group's scope is cancelled, so that its
// context, if one was made, leaves the root's.
func TestForgetIdleLooksOncePerTTL(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(unlimitedGroup(1)))
	f.r.SetIdleTTL(10) // at 0
	g1, _ := f.submit(t, "g", "g1")
	h1, _ := f.submit(t, "h", "h1")
	g, _ := f.r.Lookup("g")
	made := g.scope.Load().build()
	f.now = 5
	f.end(t, g1)
	f.now = 10
	f.r.ForgetIdle() // looks: g idle for 5
	f.end(t, h1)
	f.now = 15
	f.r.ForgetIdle() // does not look
	_, ok := f.r.Lookup("g")
	require.True(t, ok, "ForgetIdle looked twice within a TTL")
	f.now = 20
	f.r.ForgetIdle() // looks: g idle for 15, h for 10
	_, ok = f.r.Lookup("g")
	assert.False(t, ok, "g idle for 15")
	_, ok = f.r.Lookup("h")
	assert.False(t, ok, "h idle for the TTL")
	assert.ErrorIs(t, context.Cause(made.ctx), errForgotten)
}

// A group idle when the TTL is turned on counts as idle from then.
func TestIdleTTLTurnedOnCountsIdleFromThen(t *testing.T) {
	f := newFixture(t, Unlimited, false, fixed(unlimitedGroup(1)))
	g1, _ := f.submit(t, "g", "g1")
	f.end(t, g1)
	f.now = 100
	f.r.SetIdleTTL(10)
	f.now = 105
	f.r.ForgetIdle()
	_, ok := f.r.Lookup("g")
	require.True(t, ok, "g idle for 5 since the TTL was turned on")
	f.now = 110
	f.r.ForgetIdle()
	_, ok = f.r.Lookup("g")
	assert.False(t, ok)
}

// TestAParentKeepsTheLatestIdleTimeOfChildrenForgottenAtOnce: children
// forgotten at once count out of their parent. Its idle time is the latest
// of theirs, whichever stores first, or the parent would be forgotten
// before its subtree's last task is a TTL old.
func TestAParentKeepsTheLatestIdleTimeOfChildrenForgottenAtOnce(t *testing.T) {
	for round := range 30000 {
		var g Group[tk]
		g.refs.Store(8)
		start, done := make(chan struct{}), make(chan struct{}, 8)
		for at := range int64(8) {
			go func() {
				<-start
				g.exitSince(at)
				done <- struct{}{}
			}()
		}
		close(start)
		for range 8 {
			<-done
		}
		require.Equal(t, int64(7), g.idleAt.Load(), "round %d", round)
		require.Zero(t, g.refs.Load(), "round %d", round)
	}
}
