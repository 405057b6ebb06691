package groupconc_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// OldestWait is the wait of the group's oldest waiting task, whatever
// order its tasks stand in the global line: a resume sends them there by
// priority, and a lowered global limit puts one back at the head.
func TestOldestWaitIsTheOldestTasksWhateverOrderTheGlobalLineHolds(t *testing.T) {
	low := groupconc.SubmitOptions{Priority: groupconc.PriorityLow}
	high := groupconc.SubmitOptions{Priority: groupconc.PriorityHigh}
	t.Run("after a resume", func(t *testing.T) {
		upModes(t, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
			e := newExecutor(t, b().GlobalMaxInFlight(1))
			g := upNewGated()
			g.submit(t, e, "x", "x") // holds the global permit
			g.submitWith(t, e, "g", "old", low)
			paused := true
			require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{Paused: &paused}))
			time.Sleep(5 * time.Second) // fake clock
			g.submitWith(t, e, "g", "new", high)
			require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{}))
			time.Sleep(time.Second) // fake clock
			synctest.Wait()
			assert.Equal(t, 6*time.Second, groupStats(t, e, "g").OldestWait)
			g.finish(t, e)
		})
	})
	t.Run("after a lowered global limit", func(t *testing.T) {
		upIn(t, []groupconc.IsolationMode{groupconc.IsolationOff}, func(t *testing.T, b func() *groupconc.PolicyBuilder) {
			e := newExecutor(t, b().GlobalMaxInFlight(2))
			g := upNewGated()
			g.submit(t, e, "g", "r") // g's one permit
			g.submit(t, e, "x", "x")
			g.submitWith(t, e, "g", "b", low)
			time.Sleep(5 * time.Second) // fake clock
			g.submitWith(t, e, "g", "c", high)
			g.release("x")                           // c takes x's global permit and waits for g's
			time.Sleep(time.Second)                  // fake clock
			upUpdate(t, e, b().GlobalMaxInFlight(1)) // c goes back to the head of the global line
			synctest.Wait()
			st := groupStats(t, e, "g")
			assert.Equal(t, 2, st.WaitingGlobal)
			assert.Equal(t, 6*time.Second, st.OldestWait)
			g.finish(t, e)
		})
	})
}
