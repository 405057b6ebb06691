package otelgc_test

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc"
	"github.com/kobe/groupconc/otelgc/internal/grouplabel"
)

// tier is a GroupClass: the key's part before the first "-".
func tier(key string) string {
	t, _, _ := strings.Cut(key, "-")
	return t
}

func TestGroupClassSumsTheGroupsOfEachClass(t *testing.T) {
	e, r := newMetrics(t, otelgc.Options{GroupClass: tier}, groupconc.NewPolicyBuilder())
	g := newGate(t)
	for _, key := range []string{"gold-1", "gold-1", "gold-2", "free-1"} {
		submit(t, e, key, g.Task)
	}
	g.WaitStarted(3)
	requirePoints(t, r, map[string]map[string]float64{
		"groupconc.task.count": {
			"groupconc.group=free,groupconc.task.state=running": 1,
			"groupconc.group=free,groupconc.task.state=waiting": 0,
			"groupconc.group=gold,groupconc.task.state=running": 2,
			"groupconc.group=gold,groupconc.task.state=waiting": 1,
		},
		"groupconc.group.count": {"groupconc.group=free": 1, "groupconc.group=gold": 2},
	})
	g.Release()
}

func TestAllowlistLabelsEveryOtherGroupOther(t *testing.T) {
	e, r := newMetrics(t, otelgc.Options{GroupAllowlist: []string{"acme"}}, groupconc.NewPolicyBuilder())
	for _, key := range []string{"acme", "globex", "initech"} {
		submit(t, e, key, ok).Wait()
	}
	quiesce(t, e)
	requirePoints(t, r, map[string]map[string]float64{
		"groupconc.group.count":       {"groupconc.group=_other": 2, "groupconc.group=acme": 1},
		"groupconc.task.run.duration": {"groupconc.group=_other": 2, "groupconc.group=acme": 1},
	})
}

func TestLabelCapFoldsLaterValuesIntoOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		identity := func(k string) string { return k }
		o := otelgc.Options{GroupClass: identity, MaxGroupValues: 2}
		e, r := newMetrics(t, o, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
		// One at a time, so that a and b are the first values seen: a
		// value is seen as its task's OnCompleted runs, after its handle
		// completes, so each waits for the listener too.
		for _, key := range []string{"a", "b", "c", "d", "a"} {
			submit(t, e, key, ok).Wait()
			synctest.Wait()
		}
		// A rejection of a folded group is counted under Other too.
		g := newGate(t)
		h := submit(t, e, "e", g.Task)
		g.WaitStarted(1)
		submit(t, e, "e", ok).Wait()
		g.Release()
		h.Wait()
		synctest.Wait() // the listener has heard of every task
		requirePoints(t, r, map[string]map[string]float64{
			"groupconc.group.count":        {"groupconc.group=_other": 3, "groupconc.group=a": 1, "groupconc.group=b": 1},
			"groupconc.task.wait.duration": {"groupconc.group=_other": 3, "groupconc.group=a": 2, "groupconc.group=b": 1},
			"groupconc.task.rejected":      {"groupconc.group=_other,groupconc.rejection.reason=group_queue_full": 1},
		})
	})
}

func TestClassPanicAndEmptyClassAreLabelledOther(t *testing.T) {
	class := func(k string) string {
		switch k {
		case "bad":
			panic("no class")
		case "none":
			return ""
		}
		return k
	}
	e, r := newMetrics(t, otelgc.Options{GroupClass: class}, groupconc.NewPolicyBuilder())
	for _, key := range []string{"bad", "none", "fine"} {
		submit(t, e, key, ok).Wait()
	}
	requirePoints(t, r, map[string]map[string]float64{
		"groupconc.group.count": {"groupconc.group=_other": 2, "groupconc.group=fine": 1},
	})
}

func TestAGroupAttributeValueStaysAtZeroWhenItsGroupsAreGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, r := newMetrics(t, otelgc.Options{GroupClass: tier}, groupconc.NewPolicyBuilder())
		submit(t, e, "gold-1", ok).Wait()
		synctest.Wait() // the listener has heard of the task: "gold" is a value
		e.EvictGroup("gold-1")
		requirePoints(t, r, map[string]map[string]float64{
			"groupconc.group.count": {"groupconc.group=gold": 0},
			"groupconc.task.count": {
				"groupconc.group=gold,groupconc.task.state=running": 0,
				"groupconc.group=gold,groupconc.task.state=waiting": 0,
			},
			"groupconc.task.oldest_wait": {"groupconc.group=gold": 0},
		})
	})
}

// The exported constants are literals, so that go doc shows their values;
// they must be the values the label set uses.
func TestOtherAndDefaultMaxGroupValuesAreTheLabelSetsOwn(t *testing.T) {
	if otelgc.Other != grouplabel.Other {
		t.Errorf("Other = %q, the label set uses %q", otelgc.Other, grouplabel.Other)
	}
	if otelgc.DefaultMaxGroupValues != grouplabel.DefaultMax {
		t.Errorf("DefaultMaxGroupValues = %d, the label set uses %d", otelgc.DefaultMaxGroupValues, grouplabel.DefaultMax)
	}
}
