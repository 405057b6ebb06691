package otelgc_test

import (
	"context"
	"testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// newReader returns a ManualReader and a MeterProvider that reads into it.
func newReader(t testing.TB) (*sdkmetric.ManualReader, *sdkmetric.MeterProvider) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
	return r, mp
}

// newMetrics returns an executor of b with the listener of a Metrics of o
// installed and observed, and the reader of o's meter.
func newMetrics(t testing.TB, o otelgc.Options, b *groupconc.PolicyBuilder) (*groupconc.GroupExecutor, *sdkmetric.ManualReader) {
	t.Helper()
	r, mp := newReader(t)
	o.MeterProvider = mp
	m, err := otelgc.New(o)
	require.NoError(t, err)
	e := newExecutor(t, b.TaskLifecycleListener(m.Listener()))
	reg, err := m.Observe(e)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, reg.Unregister()) })
	return e, r
}

// collect reads r and returns its metrics by name.
func collect(t testing.TB, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, otelgc.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	return got
}

// key names an attribute set in the maps points returns: "k=v,k=v", sorted.
func key(s attribute.Set) string { return s.Encoded(attribute.DefaultEncoder()) }

// points returns the values of an int64 sum or float64 gauge by attribute
// set, and the histogram points of a float64 histogram as their count.
func points(t testing.TB, m metricdata.Metrics) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			got[key(p.Attributes)] = float64(p.Value)
		}
	case metricdata.Gauge[float64]:
		for _, p := range d.DataPoints {
			got[key(p.Attributes)] = p.Value
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			got[key(p.Attributes)] = float64(p.Count)
		}
	default:
		t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
	}
	return got
}

// requirePoints checks the points of every metric named in want.
func requirePoints(t testing.TB, r *sdkmetric.ManualReader, want map[string]map[string]float64) {
	t.Helper()
	got := collect(t, r)
	for name, w := range want {
		m, ok := got[name]
		if !ok {
			t.Errorf("no metric %s", name)
			continue
		}
		require.Equal(t, w, points(t, m), name)
	}
}
