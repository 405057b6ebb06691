package groupconc_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// A TTL shortened by UpdatePolicy holds at once: a group idle for twice
// the new TTL is gone by the time a later call returns. The last look, made
// under the longer TTL, kept groups idle for less than it. Once the next
// look waited for the new TTL to pass since that one, so a group idle for
// 65s stayed under a TTL of 30s.
func TestAShortenedIdleGroupTTLHoldsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().IdleGroupTTL(time.Minute))
		time.Sleep(5 * time.Second) // fake clock
		quiesce(t, e, submit(t, t.Context(), e, "c", "0", succeed))
		time.Sleep(55 * time.Second)
		assert.Equal(t, 1, e.Stats().Groups, "a look at 60s: c idle for 55s")
		time.Sleep(time.Second)
		upUpdate(t, e, groupconc.NewPolicyBuilder().IdleGroupTTL(30*time.Second))
		time.Sleep(9 * time.Second)
		assert.Equal(t, 0, e.Stats().Groups, "c idle for 65s, over twice the new TTL")
	})
}

// A TTL made longer keeps a group that the shorter one would have forgotten
// but had not yet: from UpdatePolicy on, the new TTL is the one in force.
func TestALengthenedIdleGroupTTLKeepsAGroupNotYetForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().IdleGroupTTL(time.Minute))
		time.Sleep(5 * time.Second) // fake clock
		quiesce(t, e, submit(t, t.Context(), e, "c", "0", succeed))
		time.Sleep(55 * time.Second)
		assert.Equal(t, 1, e.Stats().Groups, "a look at 60s: c idle for 55s")
		time.Sleep(50 * time.Second) // c idle for 105s, the next look not due
		upUpdate(t, e, groupconc.NewPolicyBuilder().IdleGroupTTL(10*time.Minute))
		time.Sleep(time.Minute)
		assert.Equal(t, 1, e.Stats().Groups, "c idle for less than the new TTL")
		time.Sleep(20 * time.Minute)
		assert.Equal(t, 0, e.Stats().Groups, "c idle for twice the new TTL")
	})
}
