package groupconc_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// GroupStats of a parent costs its subtree when that is smaller than what
// is active. It once read every active group, so a dashboard reading n
// paused users' idle tenants one by one cost n². With 100 or 1 000 paused
// groups elsewhere, a tenant of one busy user allocates about the same.
func TestAParentsGroupStatsCostsItsSubtreeNotEveryActiveGroup(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		per := map[int]uint64{}
		for _, n := range []int{100, 1000} {
			e := groupconc.New(mustBuild(t, builder().Isolation(mode).GlobalMaxInFlight(8).ParentSeparator("/")))
			paused := true
			for i := range n {
				key := fmt.Sprintf("o%d/u", i)
				submit(t, context.Background(), e, key, "o", succeed).Wait()
				require.NoError(t, e.SetGroupOverride(key, groupconc.GroupOverride{Paused: &paused}))
			}
			started, hold := make(chan struct{}), make(chan struct{})
			h := submit(t, context.Background(), e, "t/busy", "t", func(context.Context) (int, error) {
				close(started)
				<-hold
				return 0, nil
			})
			<-started
			per[n] = adaptertest.Allocated(func() {
				st, ok := e.GroupStats("t")
				assert.True(t, ok)
				assert.Equal(t, 1, st.Running)
				assert.Equal(t, 1, st.RunningCost)
			})
			close(hold)
			h.Wait()
			require.NoError(t, e.Close())
		}
		assert.Less(t, per[1000], 2*per[100], "bytes GroupStats of a parent allocates with 1 000 paused groups elsewhere, against 100 (%v)", per)
	})
}
