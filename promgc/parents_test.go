package promgc_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
)

// A parent's GroupStats cover its subtree: the metrics count each task
// once, in its own group, with the group label off or on. One task of
// "acme/b" waits for the global permit: groupconc_tasks_waiting_global
// must be 1, as groupconc_tasks{state="waiting"} is.
func TestWaitingGlobalCountsATaskOnceWithParents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, c := newMetrics(t, promgc.Options{}, groupconc.NewPolicyBuilder().GlobalMaxInFlight(1).ParentSeparator("/"))
		g := newGate(t)
		submit(t, e, "acme/a", g.Task)
		<-g.started
		submit(t, e, "acme/b", g.Task)
		synctest.Wait()
		requireMetrics(t, c, `
			groupconc_tasks{state="running"} 1
			groupconc_tasks{state="waiting"} 1
			groupconc_tasks_waiting_global 1
		`)
		g.Release()
	})
}

// With a group label, the task gauges summed over the label's values must
// be the executor's totals: one running, one waiting, not twice that.
func TestGroupLabelTasksCountATaskOnceWithParents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		class := func(string) string { return "all" }
		e, c := newMetrics(t, promgc.Options{GroupClass: class}, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).ParentSeparator("/"))
		g := newGate(t)
		submit(t, e, "acme/a", g.Task)
		<-g.started
		submit(t, e, "acme/a", g.Task)
		synctest.Wait()
		requireMetrics(t, c, `
			groupconc_tasks{group="all",state="running"} 1
			groupconc_tasks{group="all",state="waiting"} 1
		`)
		g.Release()
	})
}

// An evicted child's ended tasks stay in its parent's GroupStats, so they
// go to the parent's value of groupconc_group_tasks_ended, as
// docs/exporters.md says. The child's series stays, at 0.
func TestAnEvictedChildsEndedTasksGoToItsParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, c := newMetrics(t, promgc.Options{GroupClass: func(k string) string { return k }},
			groupconc.NewPolicyBuilder().ParentSeparator("/"))
		submit(t, e, "t/u1", ok).Wait()
		g := newGate(t)
		submit(t, e, "t/u2", g.Task) // keeps t known
		<-g.started
		groups := []string{"t", "t/u1", "t/u2"}
		requireMetrics(t, c, endedSuccesses(groups, map[string]int{"t/u1": 1}))
		e.EvictGroup("t/u1")
		requireMetrics(t, c, endedSuccesses(groups, map[string]int{"t": 1}))
		g.Release()
	})
}

// Under ActiveGroupsOnly a paused group is read while its idle parent is
// not. Its ended task is taken from its nearest ancestor read, t, and so
// counted once.
func TestAPausedGroupUnderAnIdleParentCountsItsTasksOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, c := newMetrics(t, promgc.Options{GroupClass: func(k string) string { return k }, ActiveGroupsOnly: true},
			groupconc.NewPolicyBuilder().ParentSeparator("/"))
		submit(t, e, "t/u/v", ok).Wait()
		g := newGate(t)
		submit(t, e, "t", g.Task) // t active by a task of its own
		<-g.started
		paused := true
		if err := e.SetGroupOverride("t/u/v", groupconc.GroupOverride{Paused: &paused}); err != nil {
			t.Fatal(err)
		}
		requireMetrics(t, c, endedSuccesses([]string{"t", "t/u/v"}, map[string]int{"t/u/v": 1}))
		g.Release()
	})
}

// endedSuccesses returns the samples of groupconc_group_tasks_ended for
// groups: each status 0 but success, succeeded[group].
func endedSuccesses(groups []string, succeeded map[string]int) string {
	var b strings.Builder
	for _, g := range groups {
		for _, st := range []string{"cancelled", "failed", "rejected", "success"} {
			n := 0
			if st == "success" {
				n = succeeded[g]
			}
			fmt.Fprintf(&b, "groupconc_group_tasks_ended{group=%q,status=%q} %d\n", g, st, n)
		}
	}
	return b.String()
}
