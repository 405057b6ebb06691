package groupconc_test

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Tasks handed permits together walk on to their next line in their order.
// Then a group's tasks still start in submission order, one by one, as its
// running task ends (DESIGN "Isolation" and "Live limits").

// startLine submits, in order, a gated task under each id (its group is
// the id's first letter), with the cost costs gives it (1 if absent).
func startLine(t *testing.T, e *groupconc.GroupExecutor, starts *fsStarts, costs map[string]int, ids ...string) (map[string]*gatedTask, []*groupconc.TaskHandle[int]) {
	t.Helper()
	ks := map[string]*gatedTask{}
	var hs []*groupconc.TaskHandle[int]
	for _, id := range ids {
		k := newGatedTask(t, 0)
		ks[id] = k
		h, err := groupconc.SubmitWith(t.Context(), e, id[:1], id, starts.task(id, k), groupconc.SubmitOptions{Cost: costs[id]})
		require.NoError(t, err)
		hs = append(hs, h)
		synctest.Wait()
	}
	return ks, hs
}

// requireStartsInTurn releases a0, a1, ... in turn and requires that each
// release starts exactly the next task of group a: a1, a2, ... up to a<n>.
func requireStartsInTurn(t *testing.T, starts *fsStarts, ks map[string]*gatedTask, n int) {
	t.Helper()
	want := starts.list()
	for i := 1; i <= n; i++ {
		ks[fmt.Sprint("a", i-1)].Release()
		synctest.Wait()
		want = append(want, fmt.Sprint("a", i))
		require.Equal(t, want, starts.list(), "a%d ended", i-1)
	}
}

func TestARaisedLimitLetsTasksOnToTheirNextLineInTheirOrder(t *testing.T) {
	for _, mode := range fsModes {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Under IsolationOff the global cap is raised, and a's tasks
				// go on to wait for a's concurrency. Under fair share a's
				// concurrency is raised, and they go on to the global line.
				policy := func(raised bool) *groupconc.GroupPolicy {
					b := groupconc.NewPolicyBuilder().Isolation(mode).GlobalMaxInFlight(1).DefaultMaxConcurrencyPerGroup(1)
					switch {
					case raised && mode == groupconc.IsolationOff:
						b.GlobalMaxInFlight(20)
					case raised:
						b.DefaultMaxConcurrencyPerGroup(20)
					}
					return mustBuild(t, b)
				}
				e := groupconc.New(policy(false))
				var starts fsStarts
				ks, hs := startLine(t, e, &starts, nil, "a0", "a1", "a2", "a3", "a4", "a5", "a6")
				require.Equal(t, []string{"a0"}, starts.list())

				require.NoError(t, e.UpdatePolicy(policy(true)))
				synctest.Wait()
				require.Equal(t, []string{"a0"}, starts.list(), "started by the raise alone")
				requireStartsInTurn(t, &starts, ks, 6)
				releaseEach(ks)
				quiesce(t, e, hs...)
				require.NoError(t, e.Close())
			})
		})
	}
}

// Under IsolationOff a task of cost 3 gives back 3 global permits at once.
// a's tasks waiting for them then wait for a's concurrency, in their order.
// (Under fair share the global permit is the last, so they would all start.)
func TestPermitsGivenBackTogetherLetTasksOnInTheirOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(1))
		var starts fsStarts
		ks, hs := startLine(t, e, &starts, map[string]int{"r0": 3}, "a0", "r0", "a1", "a2", "a3")
		require.Equal(t, []string{"a0", "r0"}, starts.list())

		ks["r0"].Release() // on its way out, r0 hands its 3 permits to a1, a2, a3
		synctest.Wait()
		requireStartsInTurn(t, &starts, ks, 3)
		releaseEach(ks)
		quiesce(t, e, hs...)
	})
}

// As above, but the permits come back from a task turned away once it held
// them. It gives them back on the goroutine that runs it as the caller.
func TestPermitsATaskTurnedAwayGivesBackLetTasksOnInTheirOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().GlobalMaxInFlight(5).DefaultMaxConcurrencyPerGroup(1).
			PerGroupQueueThreshold(map[string]int{"x": 0}).RejectionPolicy(groupconc.RejectCallerRuns))
		var starts fsStarts
		ks, hs := startLine(t, e, &starts, map[string]int{"r0": 3, "x1": 3}, "a0", "x0", "r0", "x1", "a1", "a2", "a3")
		require.Equal(t, []string{"a0", "x0", "r0"}, starts.list())

		// r0 hands its 3 permits to x1. x1 finds x's queue of no slots, is
		// turned away and gives them back to a1, a2, a3. Then it runs.
		ks["x1"].Release()
		ks["r0"].Release()
		synctest.Wait()
		require.Equal(t, []string{"a0", "x0", "r0", "x1"}, starts.list())
		assert.Equal(t, groupconc.StatusSuccess, hs[3].Wait().Status, "x1 run as the caller")
		requireStartsInTurn(t, &starts, ks, 3)
		releaseEach(ks)
		quiesce(t, e, hs...)
	})
}

func releaseEach(ks map[string]*gatedTask) {
	for _, k := range ks {
		k.Release()
	}
}
