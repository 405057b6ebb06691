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
	snapshotCostsWhatIsActive(t, "t/u%d/s", "t/busy/s", func(t *testing.T, e *groupconc.GroupExecutor) {
		assert.Equal(t, map[string]int{"t": 1, "t/busy": 1, "t/busy/s": 1}, activeRunning(e))
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
	h, release := runHeld(t, e, "t/u/busy")
	e.EvictGroup("t/u/busy")
	assert.Equal(t, map[string]int{"t": 1, "t/u": 1}, activeRunning(e))
	release()
	h.Wait()
	assert.Empty(t, activeRunning(e), "active groups once every task ended")
}

// A parent that left the active list, its children idle, comes back with
// a task of its own, and leaves again once it ends.
func TestActiveSnapshotsShowAParentOfIdleChildrenRunningItsOwnTask(t *testing.T) {
	e := groupconc.New(mustBuild(t, builder().ParentSeparator("/")))
	defer e.Close()
	h, err := groupconc.Submit(context.Background(), e, "t/u/s", "t", succeed)
	require.NoError(t, err)
	h.Wait()
	assert.Empty(t, activeRunning(e), "active groups with every task over")
	h, release := runHeld(t, e, "t/u")
	assert.Equal(t, map[string]int{"t": 1, "t/u": 1}, activeRunning(e))
	release()
	h.Wait()
	assert.Empty(t, activeRunning(e), "active groups with every task over")
}

// runHeld submits a task of key that ignores its context and runs until
// release is called, and returns once it runs.
func runHeld(t *testing.T, e *groupconc.GroupExecutor, key string) (*groupconc.TaskHandle[int], func()) {
	t.Helper()
	started, hold := make(chan struct{}), make(chan struct{})
	h, err := groupconc.Submit(context.Background(), e, key, "held", func(context.Context) (int, error) {
		close(started)
		<-hold
		return 0, nil
	})
	require.NoError(t, err)
	<-started
	return h, func() { close(hold) }
}

// activeRunning maps each group ActiveGroupStats yields to its running
// tasks.
func activeRunning(e *groupconc.GroupExecutor) map[string]int {
	seen := map[string]int{}
	for st := range e.ActiveGroupStats() {
		seen[st.GroupKey] = st.Running
	}
	return seen
}
