package otelgc_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Under ActiveGroupsOnly a collection costs what is active. A paused
// group is active while its parent, idle, is not read, so the collection
// looks its parent up. It once did so through GroupStats, whose cost for a
// parent is every active group: a collection of n paused users, each of
// its own idle tenant, cost n². With 4 times as many, a collection must
// allocate less than 8 times as much.
func TestACollectionOfPausedGroupsUnderIdleParentsCostsWhatIsActive(t *testing.T) {
	per := map[int]uint64{}
	for _, n := range []int{50, 200} {
		e, r := newMetrics(t, otelgc.Options{ActiveGroupsOnly: true}, groupconc.NewPolicyBuilder().ParentSeparator("/"))
		paused, resumed := true, false
		for i := range n {
			key := fmt.Sprintf("t%d/u", i)
			submit(t, e, key, ok).Wait()
			require.NoError(t, e.SetGroupOverride(key, groupconc.GroupOverride{Paused: &paused}))
			t.Cleanup(func() { _ = e.SetGroupOverride(key, groupconc.GroupOverride{Paused: &resumed}) })
		}
		per[n] = allocated(func() {
			var rm metricdata.ResourceMetrics
			require.NoError(t, r.Collect(context.Background(), &rm))
		})
	}
	assert.Less(t, per[200], 8*per[50], "bytes a collection allocates with 200 paused groups, against 50 (%v)", per)
}
