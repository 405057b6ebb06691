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

// A parent's snapshot costs what is active in its subtree, not every child
// remembered: an idle child adds nothing to its counts. With 100 or
// 3 000 idle children beside a busy one, GroupStats of the tenant and an
// ActiveGroupStats pass allocate about the same. They once walked every
// child, 25 to 90 times slower at 200 000 children.
func TestAParentsSnapshotCostsWhatIsActive(t *testing.T) {
	snapshotCostsWhatIsActive(t, "t/u%d", "t/busy", func(t *testing.T, e *groupconc.GroupExecutor) {
		st, _ := e.GroupStats("t")
		assert.Equal(t, 1, st.Running)
		for range e.ActiveGroupStats() {
		}
	})
}

// snapshotCostsWhatIsActive runs snap with 100, then 3 000, groups of
// keys idle (idleKey with a number) and a task of busyKey running, in both
// modes. snap must allocate less than twice as much with 3 000.
func snapshotCostsWhatIsActive(t *testing.T, idleKey, busyKey string, snap func(*testing.T, *groupconc.GroupExecutor)) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		per := map[int]uint64{}
		for _, n := range []int{100, 3000} {
			e := groupconc.New(mustBuild(t, builder().Isolation(mode).GlobalMaxInFlight(8).ParentSeparator("/")))
			for i := range n {
				h, err := groupconc.Submit(context.Background(), e, fmt.Sprintf(idleKey, i), "t", succeed)
				require.NoError(t, err)
				h.Wait()
			}
			hold := make(chan struct{})
			h, err := groupconc.Submit(context.Background(), e, busyKey, "t", func(context.Context) (int, error) {
				<-hold
				return 0, nil
			})
			require.NoError(t, err)
			per[n] = adaptertest.Allocated(func() { snap(t, e) })
			close(hold)
			h.Wait()
			require.NoError(t, e.Close())
		}
		assert.Less(t, per[3000], 2*per[100], "bytes a snapshot allocates with 3 000 idle groups, against 100 (%v)", per)
	})
}
