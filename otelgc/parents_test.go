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
