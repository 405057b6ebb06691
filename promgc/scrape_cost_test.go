package promgc_test

import (
	"fmt"
	"testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Under ActiveGroupsOnly a scrape costs what is active. A paused group is
// active while its parent, idle, is not read, so the scrape looks its
// parent up. It once did so through GroupStats, whose cost for a parent
// is every active group: a scrape of n paused users, each of its own idle
// tenant, cost n², 30 s for 4 000. With 4 times as many, a scrape must
// allocate less than 8 times as much.
func TestAScrapeOfPausedGroupsUnderIdleParentsCostsWhatIsActive(t *testing.T) {
	per := map[int]uint64{}
	for _, n := range []int{50, 200} {
		m, err := promgc.New(promgc.Options{ActiveGroupsOnly: true})
		require.NoError(t, err)
		e := newExecutor(t, groupconc.NewPolicyBuilder().ParentSeparator("/"))
		reg := prometheus.NewRegistry()
		require.NoError(t, reg.Register(m.Collector(e)))
		paused, resumed := true, false
		for i := range n {
			key := fmt.Sprintf("t%d/u", i)
			submit(t, e, key, ok).Wait()
			require.NoError(t, e.SetGroupOverride(key, groupconc.GroupOverride{Paused: &paused}))
			t.Cleanup(func() { _ = e.SetGroupOverride(key, groupconc.GroupOverride{Paused: &resumed}) })
		}
		per[n] = allocated(func() {
			_, err := reg.Gather()
			require.NoError(t, err)
		})
	}
	assert.Less(t, per[200], 8*per[50], "bytes a scrape allocates with 200 paused groups, against 50 (%v)", per)
}
