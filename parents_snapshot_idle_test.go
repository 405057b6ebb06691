package groupconc_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A group whose only tie to the executor is its idle children remembered
// has nothing going on. With keys three deep (tenant/user/session), every
// user with a session remembered is such a group. ActiveGroupStats once
// visited each of them: a snapshot of one busy session among 3 000 idle
// users cost 30 times one among 100.
func TestActiveSnapshotsPassOverParentsOfIdleChildren(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		per := map[int]uint64{}
		for _, n := range []int{100, 3000} {
			e := groupconc.New(mustBuild(t, builder().Isolation(mode).GlobalMaxInFlight(8).ParentSeparator("/")))
			for i := range n {
				h, err := groupconc.Submit(context.Background(), e, fmt.Sprintf("t/u%d/s", i), "t", succeed)
				require.NoError(t, err)
				h.Wait()
			}
			hold := make(chan struct{})
			h, err := groupconc.Submit(context.Background(), e, "t/busy/s", "t", func(context.Context) (int, error) {
				<-hold
				return 0, nil
			})
			require.NoError(t, err)
			per[n] = allocated(func() {
				seen := map[string]int{}
				for st := range e.ActiveGroupStats() {
					seen[st.GroupKey] = st.Running
				}
				assert.Equal(t, map[string]int{"t": 1, "t/busy": 1, "t/busy/s": 1}, seen)
			})
			close(hold)
			h.Wait()
			require.NoError(t, e.Close())
		}
		assert.Less(t, per[3000], 2*per[100], "bytes an active snapshot allocates with 3 000 idle users, against 100 (%v)", per)
	})
}

// A child evicted while its task runs is gone from the list, but the task
// still holds its ancestors' permits: they show it, and stay active.
func TestActiveSnapshotsKeepTheParentsOfAnEvictedBusyChild(t *testing.T) {
	e := groupconc.New(mustBuild(t, builder().ParentSeparator("/")))
	defer e.Close()
	for i := range 3 {
		h, err := groupconc.Submit(context.Background(), e, fmt.Sprintf("t/u/s%d", i), "t", succeed)
		require.NoError(t, err)
		h.Wait()
	}
	started, hold := make(chan struct{}), make(chan struct{})
	h, err := groupconc.Submit(context.Background(), e, "t/u/busy", "t", func(context.Context) (int, error) {
		close(started)
		<-hold // ignores the eviction's cancel
		return 0, nil
	})
	require.NoError(t, err)
	<-started
	e.EvictGroup("t/u/busy")
	seen := map[string]int{}
	for st := range e.ActiveGroupStats() {
		seen[st.GroupKey] = st.Running
	}
	assert.Equal(t, map[string]int{"t": 1, "t/u": 1}, seen)
	close(hold)
	h.Wait()
	for st := range e.ActiveGroupStats() {
		assert.Fail(t, "an active group left once every task ended", "%+v", st)
	}
}

// A parent that left the active list, its children idle, comes back with
// a task of its own, and leaves again once it ends.
func TestActiveSnapshotsShowAParentOfIdleChildrenRunningItsOwnTask(t *testing.T) {
	e := groupconc.New(mustBuild(t, builder().ParentSeparator("/")))
	defer e.Close()
	h, err := groupconc.Submit(context.Background(), e, "t/u/s", "t", succeed)
	require.NoError(t, err)
	h.Wait()
	for st := range e.ActiveGroupStats() {
		assert.Fail(t, "an active group with every task over", "%+v", st)
	}
	started, hold := make(chan struct{}), make(chan struct{})
	h, err = groupconc.Submit(context.Background(), e, "t/u", "own", func(context.Context) (int, error) {
		close(started)
		<-hold
		return 0, nil
	})
	require.NoError(t, err)
	<-started
	seen := map[string]int{}
	for st := range e.ActiveGroupStats() {
		seen[st.GroupKey] = st.Running
	}
	assert.Equal(t, map[string]int{"t": 1, "t/u": 1}, seen)
	close(hold)
	h.Wait()
	for st := range e.ActiveGroupStats() {
		assert.Fail(t, "an active group with every task over", "%+v", st)
	}
}
