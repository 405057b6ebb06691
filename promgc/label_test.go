package promgc_test

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
	"github.com/kobe/groupconc/promgc/internal/grouplabel"
)

// tier is a GroupClass: the key's part before the first "-".
func tier(key string) string {
	t, _, _ := strings.Cut(key, "-")
	return t
}

func TestGroupClassSumsTheGroupsOfEachClass(t *testing.T) {
	e, c := newMetrics(t, promgc.Options{GroupClass: tier}, groupconc.NewPolicyBuilder())
	g := newGate(t)
	for _, key := range []string{"gold-1", "gold-1", "gold-2", "free-1"} {
		submit(t, e, key, g.Task)
	}
	g.WaitStarted(3)
	requireMetrics(t, c, `
		groupconc_tasks{group="free",state="running"} 1
		groupconc_tasks{group="free",state="waiting"} 0
		groupconc_tasks{group="gold",state="running"} 2
		groupconc_tasks{group="gold",state="waiting"} 1
		groupconc_groups{group="free"} 1
		groupconc_groups{group="gold"} 2
	`)
	g.Release()
}

// In these tests synctest's clock stands still while tasks run, so every
// wait and run time is 0.

func TestAllowlistLabelsEveryOtherGroupOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := promgc.Options{GroupAllowlist: []string{"acme"}, Buckets: []float64{1}}
		e, c := newMetrics(t, o, groupconc.NewPolicyBuilder())
		for _, key := range []string{"acme", "globex", "initech"} {
			submit(t, e, key, ok).Wait()
		}
		synctest.Wait() // the listener has heard of every task
		requireMetrics(t, c, `
			groupconc_groups{group="_other"} 2
			groupconc_groups{group="acme"} 1
			groupconc_task_run_seconds_bucket{group="_other",le="1"} 2
			groupconc_task_run_seconds_bucket{group="_other",le="+Inf"} 2
			groupconc_task_run_seconds_sum{group="_other"} 0
			groupconc_task_run_seconds_count{group="_other"} 2
			groupconc_task_run_seconds_bucket{group="acme",le="1"} 1
			groupconc_task_run_seconds_bucket{group="acme",le="+Inf"} 1
			groupconc_task_run_seconds_sum{group="acme"} 0
			groupconc_task_run_seconds_count{group="acme"} 1
		`)
	})
}

func TestLabelCapFoldsLaterValuesIntoOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		identity := func(k string) string { return k }
		o := promgc.Options{GroupClass: identity, MaxGroupValues: 2, Buckets: []float64{1}}
		e, c := newMetrics(t, o, groupconc.NewPolicyBuilder().DefaultQueueThresholdPerGroup(0))
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
		requireMetrics(t, c, `
			groupconc_groups{group="_other"} 3
			groupconc_groups{group="a"} 1
			groupconc_groups{group="b"} 1
			groupconc_task_wait_seconds_bucket{group="_other",le="1"} 3
			groupconc_task_wait_seconds_bucket{group="_other",le="+Inf"} 3
			groupconc_task_wait_seconds_sum{group="_other"} 0
			groupconc_task_wait_seconds_count{group="_other"} 3
			groupconc_task_wait_seconds_bucket{group="a",le="1"} 2
			groupconc_task_wait_seconds_bucket{group="a",le="+Inf"} 2
			groupconc_task_wait_seconds_sum{group="a"} 0
			groupconc_task_wait_seconds_count{group="a"} 2
			groupconc_task_wait_seconds_bucket{group="b",le="1"} 1
			groupconc_task_wait_seconds_bucket{group="b",le="+Inf"} 1
			groupconc_task_wait_seconds_sum{group="b"} 0
			groupconc_task_wait_seconds_count{group="b"} 1
			groupconc_tasks_rejected_total{group="_other",reason="displaced"} 0
			groupconc_tasks_rejected_total{group="_other",reason="global_queue_full"} 0
			groupconc_tasks_rejected_total{group="_other",reason="group_queue_full"} 1
			groupconc_tasks_rejected_total{group="_other",reason="wait_timeout"} 0
			groupconc_tasks_rejected_total{group="a",reason="displaced"} 0
			groupconc_tasks_rejected_total{group="a",reason="global_queue_full"} 0
			groupconc_tasks_rejected_total{group="a",reason="group_queue_full"} 0
			groupconc_tasks_rejected_total{group="a",reason="wait_timeout"} 0
			groupconc_tasks_rejected_total{group="b",reason="displaced"} 0
			groupconc_tasks_rejected_total{group="b",reason="global_queue_full"} 0
			groupconc_tasks_rejected_total{group="b",reason="group_queue_full"} 0
			groupconc_tasks_rejected_total{group="b",reason="wait_timeout"} 0
		`)
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
	e, c := newMetrics(t, promgc.Options{GroupClass: class}, groupconc.NewPolicyBuilder())
	for _, key := range []string{"bad", "none", "fine"} {
		submit(t, e, key, ok).Wait()
	}
	requireMetrics(t, c, `
		groupconc_groups{group="_other"} 2
		groupconc_groups{group="fine"} 1
	`)
}

func TestAGroupLabelValueStaysAtZeroWhenItsGroupsAreGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, c := newMetrics(t, promgc.Options{GroupClass: tier}, groupconc.NewPolicyBuilder())
		submit(t, e, "gold-1", ok).Wait()
		synctest.Wait() // the listener has heard of the task: "gold" is a value
		e.EvictGroup("gold-1")
		requireMetrics(t, c, `
			groupconc_groups{group="gold"} 0
			groupconc_tasks{group="gold",state="running"} 0
			groupconc_tasks{group="gold",state="waiting"} 0
			groupconc_oldest_wait_seconds{group="gold"} 0
		`)
	})
}

// The exported constants are literals, so that go doc shows their values;
// they must be the values the label set uses.
func TestOtherAndDefaultMaxGroupValuesAreTheLabelSetsOwn(t *testing.T) {
	if promgc.Other != grouplabel.Other {
		t.Errorf("Other = %q, the label set uses %q", promgc.Other, grouplabel.Other)
	}
	if promgc.DefaultMaxGroupValues != grouplabel.DefaultMax {
		t.Errorf("DefaultMaxGroupValues = %d, the label set uses %d", promgc.DefaultMaxGroupValues, grouplabel.DefaultMax)
	}
}
