package otelgc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc"
)

// A task cancelled through its handle as it ran is recorded, with its run
// up to the Cancel, however long its function takes to return after.
func TestHistogramsRecordATaskCancelledAsItRanUpToTheCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, r := newMetrics(t, otelgc.Options{Buckets: []float64{1, 5}}, groupconc.NewPolicyBuilder())
		returned := make(chan struct{})
		h := submit(t, e, "a", func(ctx context.Context) (int, error) {
			defer close(returned)
			<-ctx.Done()
			time.Sleep(10 * time.Second) // past every bound
			return 0, ctx.Err()
		})
		time.Sleep(3 * time.Second)
		require.True(t, h.Cancel())
		assert.Equal(t, groupconc.StatusCancelled, h.Wait().Status)
		<-returned
		synctest.Wait() // the listener has heard of the task
		got := collect(t, r)
		for name, want := range map[string]metricdata.HistogramDataPoint[float64]{
			"groupconc.task.wait.duration": {
				Count: 1, Bounds: []float64{1, 5}, BucketCounts: []uint64{1, 0, 0}, Sum: 0,
				Min: metricdata.NewExtrema(0.0), Max: metricdata.NewExtrema(0.0),
			},
			"groupconc.task.run.duration": {
				Count: 1, Bounds: []float64{1, 5}, BucketCounts: []uint64{0, 1, 0}, Sum: 3,
				Min: metricdata.NewExtrema(3.0), Max: metricdata.NewExtrema(3.0),
			},
		} {
			h, ok := got[name].Data.(metricdata.Histogram[float64])
			require.True(t, ok, name)
			require.Len(t, h.DataPoints, 1, name)
			metricdatatest.AssertEqual(t, want, h.DataPoints[0], metricdatatest.IgnoreTimestamp())
		}
	})
}
