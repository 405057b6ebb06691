package groupconc_test

// Adaptive users under tenants as groups come and go: a pause, an idle TTL
// that forgets a user while its tenant stays, and EvictGroup of a tenant
// whose users adapt.

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// treeOf returns a builder of tenants "t" (limit 6) over users of limit 4,
// the users adaptive through d, telling changes to told.
func treeOf(d *dial, told *[]groupconc.LimitChange, mu *sync.Mutex) *groupconc.PolicyBuilder {
	return groupconc.NewPolicyBuilder().ParentSeparator("/").
		PerGroupMaxConcurrency(map[string]int{"t": 6}).DefaultMaxConcurrencyPerGroup(4).
		AdaptiveConcurrency(groupconc.AdaptiveConfig{New: d.new, Min: 1}).
		LimitChanges(func(c groupconc.LimitChange) {
			mu.Lock()
			*told = append(*told, c)
			mu.Unlock()
		})
}

// A paused user's time in pause feeds no sample: its limit stays where its
// samples left it, and after the resume its waiting tasks start under it.
func TestAPausedAdaptiveUserKeepsItsLimitThroughThePause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDial("t/u")
		var told []groupconc.LimitChange
		var mu sync.Mutex
		e := groupconc.New(mustBuild(t, treeOf(d, &told, &mu)))
		defer e.Close()
		d.set("t/u", 2)
		submit(t, t.Context(), e, "t/u", "a", func(context.Context) (int, error) { return 0, nil }).Wait()
		require.Equal(t, 2, groupStats(t, e, "t/u").MaxConcurrency)
		d.set("t/u", 0) // from now on each sample keeps the limit it started under
		on := true
		require.NoError(t, e.SetGroupOverride("t/u", groupconc.GroupOverride{Paused: &on}))
		var running gauge
		gate := make(chan struct{})
		var hs []*groupconc.TaskHandle[int]
		for range 3 {
			hs = append(hs, submit(t, t.Context(), e, "t/u", "w", gated(gate, 0, &running)))
		}
		time.Sleep(time.Hour) // fake clock: a long pause
		synctest.Wait()
		assert.Zero(t, running.cur.Load(), "a paused user starts nothing")
		assert.Equal(t, 2, groupStats(t, e, "t/u").MaxConcurrency, "a pause moves no adaptive limit")
		require.NoError(t, e.SetGroupOverride("t/u", groupconc.GroupOverride{}))
		synctest.Wait()
		assert.Equal(t, int64(2), running.cur.Load(), "the resumed user starts what its adaptive limit lets in")
		close(gate)
		for _, h := range hs {
			assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status)
		}
		assert.Equal(t, 2, groupStats(t, e, "t/u").MaxConcurrency)
		mu.Lock()
		defer mu.Unlock()
		assert.Len(t, told, 1, "one change, the one before the pause")
	})
}

// An idle TTL forgets an adaptive user while its tenant stays, held by
// another user. The user comes back at its resolved limit. The tenant's
// limit, and its other user's adaptive limit, stay where they were.
func TestAnIdleTTLForgetsAnAdaptiveUserWhileItsTenantStays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDial("t/u", "t/v")
		var told []groupconc.LimitChange
		var mu sync.Mutex
		e := groupconc.New(mustBuild(t, treeOf(d, &told, &mu).IdleGroupTTL(time.Second)))
		defer e.Close()
		d.set("t/u", 1)
		d.set("t/v", 3)
		submit(t, t.Context(), e, "t/u", "a", func(context.Context) (int, error) { return 0, nil }).Wait()
		gate := make(chan struct{})
		h := submit(t, t.Context(), e, "t/v", "held", gated(gate, 0))
		synctest.Wait()
		require.Equal(t, 1, groupStats(t, e, "t/u").MaxConcurrency)
		time.Sleep(3 * time.Second) // fake clock: past twice the TTL
		_, ok := e.GroupStats("t/u")
		assert.False(t, ok, "the idle user is forgotten")
		assert.Equal(t, 6, groupStats(t, e, "t").MaxConcurrency, "its tenant stays, held by v")
		d.set("t/u", 0)
		var running gauge
		gate2 := make(chan struct{})
		var hs []*groupconc.TaskHandle[int]
		for range 5 {
			hs = append(hs, submit(t, t.Context(), e, "t/u", "b", gated(gate2, 0, &running)))
		}
		synctest.Wait()
		assert.Equal(t, 4, groupStats(t, e, "t/u").MaxConcurrency, "back at its resolved limit")
		assert.Equal(t, int64(4), running.cur.Load(), "under the tenant's 6, with v running 1")
		close(gate)
		close(gate2)
		h.Wait()
		for _, h := range hs {
			h.Wait()
		}
		assert.Equal(t, 3, groupStats(t, e, "t/v").MaxConcurrency, "v's sample moved v's limit alone")
		assert.Equal(t, 6, groupStats(t, e, "t").MaxConcurrency)
	})
}

// EvictGroup of a tenant whose users adapt cancels their tasks. Those that
// still run end with samples that move no limit and tell no change. The
// users, used again, start at their resolved limits.
func TestEvictingATenantOfAdaptiveUsersLeavesNoLimitMoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDial("t/u", "t/v")
		var told []groupconc.LimitChange
		var mu sync.Mutex
		e := groupconc.New(mustBuild(t, treeOf(d, &told, &mu)))
		defer e.Close()
		gate := make(chan struct{})
		var hs []*groupconc.TaskHandle[int]
		for _, k := range []string{"t/u", "t/u", "t/v", "t/v", "t/v"} {
			hs = append(hs, submit(t, t.Context(), e, k, "x", gated(gate, 0))) // ignores its ctx
		}
		synctest.Wait()
		d.set("t/u", 1)
		d.set("t/v", 2)
		e.EvictGroup("t")
		synctest.Wait()
		close(gate)
		for _, h := range hs {
			h.Wait()
		}
		mu.Lock()
		assert.Empty(t, told, "an evicted subtree's samples tell no change")
		mu.Unlock()
		for _, k := range []string{"t/u", "t/v"} {
			_, ok := e.GroupStats(k)
			assert.False(t, ok, "%s is forgotten with its tenant", k)
		}
		d.set("t/u", 0)
		submit(t, t.Context(), e, "t/u", "again", func(context.Context) (int, error) { return 0, nil }).Wait()
		assert.Equal(t, 4, groupStats(t, e, "t/u").MaxConcurrency, "a user used again starts at its resolved limit")
		assert.Zero(t, e.Stats().Running)
	})
}
