package otelgc_test

import (
	"testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc"
)

// Without a group attribute the task count is the executor's own, which
// counts a task of an evicted group until it finishes.
func TestTheTaskCountKeepsAnEvictedGroupsRunningTask(t *testing.T) {
	e, r := newMetrics(t, otelgc.Options{}, groupconc.NewPolicyBuilder())
	g := newGate(t)
	h := submit(t, e, "a", g.Task)
	g.WaitStarted(1)
	e.EvictGroup("a")
	requirePoints(t, r, map[string]map[string]float64{
		"groupconc.task.count":  {"groupconc.task.state=running": 1, "groupconc.task.state=waiting": 0},
		"groupconc.group.count": {none: 0},
	})
	g.Release()
	h.Wait()
}
