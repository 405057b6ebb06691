package promgc_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
)

// why starts, on e of global limit 1, a task of "a" that runs 5s, one of
// "b" that waits 5s for the global permit, and pauses "p", whose one task
// has succeeded. It returns the gate that ends them. Call it inside a
// synctest bubble: its sleep moves the fake clock, and the bubble's
// goroutines are durably blocked on the gate by then.
func why(t *testing.T, e *groupconc.GroupExecutor) *gate {
	t.Helper()
	submit(t, e, "p", ok).Wait()
	paused := true
	require.NoError(t, e.SetGroupOverride("p", groupconc.GroupOverride{Paused: &paused}))
	g := newGate(t)
	submit(t, e, "a", g.Task)
	submit(t, e, "b", g.Task)
	time.Sleep(5 * time.Second)
	return g
}

func TestCollectorReportsPausedGroupsTheLongestRunAndTheGlobalWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, c := newMetrics(t, promgc.Options{}, groupconc.NewPolicyBuilder().GlobalMaxInFlight(1))
		g := why(t, e)
		requireMetrics(t, c, `
			groupconc_paused_groups 1
			groupconc_oldest_running_seconds 5
			groupconc_tasks_waiting_global 1
		`)
		g.Release()
	})
}

func TestCollectorReportsEachGroupsWhyAndEndsWithAGroupLabel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := promgc.Options{GroupAllowlist: []string{"a", "b", "p"}}
		e, c := newMetrics(t, o, groupconc.NewPolicyBuilder().GlobalMaxInFlight(1))
		g := why(t, e)
		requireMetrics(t, c, `
			groupconc_paused_groups{group="a"} 0
			groupconc_paused_groups{group="b"} 0
			groupconc_paused_groups{group="p"} 1
			groupconc_oldest_running_seconds{group="a"} 5
			groupconc_oldest_running_seconds{group="b"} 0
			groupconc_oldest_running_seconds{group="p"} 0
			groupconc_tasks_waiting_global{group="a"} 0
			groupconc_tasks_waiting_global{group="b"} 1
			groupconc_tasks_waiting_global{group="p"} 0
			groupconc_group_tasks_ended{group="a",status="cancelled"} 0
			groupconc_group_tasks_ended{group="a",status="failed"} 0
			groupconc_group_tasks_ended{group="a",status="rejected"} 0
			groupconc_group_tasks_ended{group="a",status="success"} 0
			groupconc_group_tasks_ended{group="b",status="cancelled"} 0
			groupconc_group_tasks_ended{group="b",status="failed"} 0
			groupconc_group_tasks_ended{group="b",status="rejected"} 0
			groupconc_group_tasks_ended{group="b",status="success"} 0
			groupconc_group_tasks_ended{group="p",status="cancelled"} 0
			groupconc_group_tasks_ended{group="p",status="failed"} 0
			groupconc_group_tasks_ended{group="p",status="rejected"} 0
			groupconc_group_tasks_ended{group="p",status="success"} 1
		`)
		g.Release()
	})
}

// With ActiveGroupsOnly a scrape reads the groups with something going on:
// the task gauges are the same, the groups are those active.
func TestActiveGroupsOnlyReadsTheActiveGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := promgc.Options{GroupClass: tier, ActiveGroupsOnly: true}
		e, c := newMetrics(t, o, groupconc.NewPolicyBuilder())
		for _, key := range []string{"gold-1", "gold-2", "free-1"} {
			submit(t, e, key, ok).Wait()
		}
		g := newGate(t)
		submit(t, e, "gold-1", g.Task)
		submit(t, e, "gold-1", g.Task)
		synctest.Wait()
		requireMetrics(t, c, `
			groupconc_tasks{group="free",state="running"} 0
			groupconc_tasks{group="free",state="waiting"} 0
			groupconc_tasks{group="gold",state="running"} 1
			groupconc_tasks{group="gold",state="waiting"} 1
			groupconc_groups{group="free"} 0
			groupconc_groups{group="gold"} 1
			groupconc_group_tasks_ended{group="free",status="cancelled"} 0
			groupconc_group_tasks_ended{group="free",status="failed"} 0
			groupconc_group_tasks_ended{group="free",status="rejected"} 0
			groupconc_group_tasks_ended{group="free",status="success"} 0
			groupconc_group_tasks_ended{group="gold",status="cancelled"} 0
			groupconc_group_tasks_ended{group="gold",status="failed"} 0
			groupconc_group_tasks_ended{group="gold",status="rejected"} 0
			groupconc_group_tasks_ended{group="gold",status="success"} 1
		`)
		g.Release()
	})
}
