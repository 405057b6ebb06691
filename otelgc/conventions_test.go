package otelgc_test

import (
	"testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// instrument is what the conventions say of one instrument.
type instrument struct {
	unit string
	kind string // "counter", "updowncounter", "gauge", "histogram"
}

var instruments = map[string]instrument{
	"groupconc.task.count":              {"{task}", "updowncounter"},
	"groupconc.group.count":             {"{group}", "updowncounter"},
	"groupconc.group.concurrency.limit": {"{permit}", "updowncounter"},
	"groupconc.task.oldest_wait":        {"s", "gauge"},
	"groupconc.global.inflight.usage":   {"{permit}", "updowncounter"},
	"groupconc.global.inflight.limit":   {"{permit}", "updowncounter"},
	"groupconc.task.submitted":          {"{task}", "counter"},
	"groupconc.task.completed":          {"{task}", "counter"},
	"groupconc.task.wait.duration":      {"s", "histogram"},
	"groupconc.task.run.duration":       {"s", "histogram"},
	"groupconc.task.rejected":           {"{task}", "counter"},
	"groupconc.submit.blocked":          {"{caller}", "updowncounter"},
	"groupconc.group.paused":            {"{group}", "updowncounter"},
	"groupconc.task.oldest_running":     {"s", "gauge"},
	"groupconc.task.waiting_global":     {"{task}", "updowncounter"},
	"groupconc.group.task.ended":        {"{task}", "updowncounter"},
}

func kind(d metricdata.Aggregation) string {
	switch d := d.(type) {
	case metricdata.Sum[int64]:
		if d.IsMonotonic {
			return "counter"
		}
		return "updowncounter"
	case metricdata.Gauge[float64]:
		return "gauge"
	case metricdata.Histogram[float64]:
		return "histogram"
	}
	return "unknown"
}

func TestInstrumentsFollowTheNamingConventions(t *testing.T) {
	// A group class, so that groupconc.group.task.ended has points too.
	o := otelgc.Options{ExecutorName: "api", GroupClass: func(string) string { return "all" }}
	e, r := newMetrics(t, o, groupconc.NewPolicyBuilder().
		GlobalMaxInFlight(1).GlobalQueueThreshold(0))
	g := newGate(t)
	h := submit(t, e, "a", g.Task)
	g.WaitStarted(1)
	submit(t, e, "b", ok).Wait() // rejected: every instrument has a point
	g.Release()
	h.Wait()
	quiesce(t, e)

	got := collect(t, r)
	require.Len(t, got, len(instruments))
	for name, want := range instruments {
		m := got[name]
		assert.Equal(t, want.unit, m.Unit, name)
		assert.Equal(t, want.kind, kind(m.Data), name)
		assert.NotEmpty(t, m.Description, name)
		if s, ok := m.Data.(metricdata.Sum[int64]); ok {
			assert.Equal(t, metricdata.CumulativeTemporality, s.Temporality, name)
		}
		// The executor's name is on every point.
		for k := range points(t, m) {
			assert.Contains(t, k, "groupconc.executor.name=api", name)
		}
	}
}

func TestAttributeKeysAreNamespaced(t *testing.T) {
	for _, k := range []attribute.Key{otelgc.AttrExecutorName, otelgc.AttrGroup, otelgc.AttrTaskState, otelgc.AttrTaskStatus, otelgc.AttrRejectionReason} {
		assert.Regexp(t, `^groupconc(\.[a-z_]+)+$`, string(k))
	}
}
