package promgc_test

import (
	"testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
)

// Without a group label the task count is the executor's own, which
// counts a task of an evicted group until it finishes.
func TestTheTaskCountKeepsAnEvictedGroupsRunningTask(t *testing.T) {
	e, c := newMetrics(t, promgc.Options{}, groupconc.NewPolicyBuilder())
	g := newGate(t)
	h := submit(t, e, "a", g.Task)
	g.WaitStarted(1)
	e.EvictGroup("a")
	requireMetrics(t, c, `
		groupconc_tasks{state="running"} 1
		groupconc_tasks{state="waiting"} 0
		groupconc_groups 0
	`)
	g.Release()
	h.Wait()
}
