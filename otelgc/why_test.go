package otelgc_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc"
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

func TestObservePausedGroupsTheLongestRunAndTheGlobalWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, r := newMetrics(t, otelgc.Options{}, groupconc.NewPolicyBuilder().GlobalMaxInFlight(1))
		g := why(t, e)
		requirePoints(t, r, map[string]map[string]float64{
			"groupconc.group.paused":        {none: 1},
			"groupconc.task.oldest_running": {none: 5},
			"groupconc.task.waiting_global": {none: 1},
		})
		g.Release()
	})
}

func TestObserveEachGroupsWhyAndEndsWithAGroupAttribute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := otelgc.Options{GroupAllowlist: []string{"a", "b", "p"}}
		e, r := newMetrics(t, o, groupconc.NewPolicyBuilder().GlobalMaxInFlight(1))
		g := why(t, e)
		ended := func(group string, success float64) map[string]float64 {
			m := map[string]float64{}
			for _, s := range []string{"cancelled", "failed", "rejected", "success"} {
				m["groupconc.group="+group+",groupconc.task.status="+s] = 0
			}
			m["groupconc.group="+group+",groupconc.task.status=success"] = success
			return m
		}
		all := map[string]float64{}
		for group, n := range map[string]float64{"a": 0, "b": 0, "p": 1} {
			for k, v := range ended(group, n) {
				all[k] = v
			}
		}
		requirePoints(t, r, map[string]map[string]float64{
			"groupconc.group.paused":        {"groupconc.group=a": 0, "groupconc.group=b": 0, "groupconc.group=p": 1},
			"groupconc.task.oldest_running": {"groupconc.group=a": 5, "groupconc.group=b": 0, "groupconc.group=p": 0},
			"groupconc.task.waiting_global": {"groupconc.group=a": 0, "groupconc.group=b": 1, "groupconc.group=p": 0},
			"groupconc.group.task.ended":    all,
		})
		g.Release()
	})
}

// With ActiveGroupsOnly a collection reads the groups with something going
// on: the task counts are the same, the groups are those active.
func TestActiveGroupsOnlyReadsTheActiveGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := otelgc.Options{GroupClass: tier, ActiveGroupsOnly: true}
		e, r := newMetrics(t, o, groupconc.NewPolicyBuilder())
		for _, key := range []string{"gold-1", "gold-2", "free-1"} {
			submit(t, e, key, ok).Wait()
		}
		g := newGate(t)
		submit(t, e, "gold-1", g.Task)
		submit(t, e, "gold-1", g.Task)
		synctest.Wait()
		requirePoints(t, r, map[string]map[string]float64{
			"groupconc.group.count": {"groupconc.group=free": 0, "groupconc.group=gold": 1},
			"groupconc.task.count": {
				"groupconc.group=free,groupconc.task.state=running": 0,
				"groupconc.group=free,groupconc.task.state=waiting": 0,
				"groupconc.group=gold,groupconc.task.state=running": 1,
				"groupconc.group=gold,groupconc.task.state=waiting": 1,
			},
		})
		g.Release()
	})
}
