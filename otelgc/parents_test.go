package otelgc_test

import (
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc"
)

// A parent's GroupStats cover its subtree: the one task of "acme/b"
// waiting for the global permit is counted once, not again in "acme".
func TestOtelCountsATaskOnceWithParents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, r := newMetrics(t, otelgc.Options{}, groupconc.NewPolicyBuilder().GlobalMaxInFlight(1).ParentSeparator("/"))
		g := newGate(t)
		submit(t, e, "acme/a", g.Task)
		<-g.started
		submit(t, e, "acme/b", g.Task)
		synctest.Wait()
		requirePoints(t, r, map[string]map[string]float64{
			"groupconc.task.waiting_global": {none: 1},
		})
		g.Release()
	})
}

// Under ActiveGroupsOnly a paused group is read while its idle parent is
// not. Its ended task is taken from its nearest ancestor read, t, and so
// counted once.
func TestAPausedGroupUnderAnIdleParentCountsItsTasksOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, r := newMetrics(t, otelgc.Options{GroupClass: func(k string) string { return k }, ActiveGroupsOnly: true},
			groupconc.NewPolicyBuilder().ParentSeparator("/"))
		submit(t, e, "t/u/v", ok).Wait()
		g := newGate(t)
		submit(t, e, "t", g.Task) // t active by a task of its own
		<-g.started
		paused := true
		if err := e.SetGroupOverride("t/u/v", groupconc.GroupOverride{Paused: &paused}); err != nil {
			t.Fatal(err)
		}
		var ended float64
		for _, n := range points(t, collect(t, r)["groupconc.group.task.ended"]) {
			ended += n
		}
		if ended != 1 {
			t.Errorf("groupconc.group.task.ended sums to %v over the groups, want 1: the one task", ended)
		}
		g.Release()
	})
}
