package otelgc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc"
)

// Nil Buckets are DefaultBuckets, not the SDK's own default, which suits
// milliseconds.
func TestNilBucketsAreTheDefaultBuckets(t *testing.T) {
	e, r := newMetrics(t, otelgc.Options{}, groupconc.NewPolicyBuilder())
	submit(t, e, "a", func(context.Context) (int, error) { return 0, nil }).Wait()
	quiesce(t, e)
	got := collect(t, r)
	for _, name := range []string{"groupconc.task.wait.duration", "groupconc.task.run.duration"} {
		h, ok := got[name].Data.(metricdata.Histogram[float64])
		require.True(t, ok, name)
		require.Len(t, h.DataPoints, 1, name)
		assert.Equal(t, otelgc.DefaultBuckets, h.DataPoints[0].Bounds, name)
	}
}
