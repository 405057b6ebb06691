package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With a tenant and its users all adaptive, a user's samples go to the
// user's algorithm alone and a tenant's own tasks' to the tenant's. So a
// user's slow backend lowers the user's limit, never the tenant's: a
// parent's adaptive limit learns from its own tasks alone
// (docs/adaptive.md). A tenant's own sample counts its subtree's permits.
func TestEachLayersSamplesMoveOnlyItsOwnLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDial("t", "t/u")
		e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().ParentSeparator("/").
			PerGroupMaxConcurrency(map[string]int{"t": 8}).DefaultMaxConcurrencyPerGroup(4).
			AdaptiveConcurrency(groupconc.AdaptiveConfig{New: d.new, Min: 1})))
		defer e.Close()
		d.set("t/u", 2)
		gate := make(chan struct{})
		var hs []*groupconc.TaskHandle[int]
		for range 3 {
			h, err := groupconc.SubmitWith(t.Context(), e, "t/u", "u", gated(gate, 0), groupconc.SubmitOptions{Cost: 2})
			require.NoError(t, err)
			hs = append(hs, h)
		}
		synctest.Wait()
		hs = append(hs, submit(t, t.Context(), e, "t", "own", gated(gate, 0)))
		synctest.Wait()
		close(gate)
		for _, h := range hs {
			assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status)
		}
		assert.Equal(t, 2, groupStats(t, e, "t/u").MaxConcurrency, "the user's samples moved the user's limit")
		assert.Equal(t, 8, groupStats(t, e, "t").MaxConcurrency, "and not the tenant's")
		d.mu.Lock()
		defer d.mu.Unlock() // no task runs past here: each would take d.mu
		require.Len(t, d.seen["t/u"], 3)
		require.Len(t, d.seen["t"], 1)
		own := d.seen["t"][0]
		assert.Equal(t, "t", own.GroupKey)
		assert.Equal(t, 5, own.Running, "the tenant's own task, and its user's two of cost 2")
		assert.Equal(t, 8, own.Limit)
	})
}
