package promgc_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
)

// Nil Buckets are DefaultBuckets, and a last +Inf in Buckets is the one
// every histogram has: both histograms get the bounds given, then +Inf
// once.
func TestHistogramsHaveTheBucketsGivenAndOneInf(t *testing.T) {
	for _, tc := range []struct {
		name    string
		buckets []float64
		want    []float64
	}{
		{"nil", nil, promgc.DefaultBuckets},
		{"ending in +Inf", []float64{1, 2.5, math.Inf(1)}, []float64{1, 2.5}},
		{"given", []float64{0.5}, []float64{0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, c := newMetrics(t, promgc.Options{Buckets: tc.buckets}, groupconc.NewPolicyBuilder())
			submit(t, e, "a", func(context.Context) (int, error) { return 0, nil }).Wait()
			quiesce(t, e)
			for _, name := range []string{"groupconc_task_wait_seconds", "groupconc_task_run_seconds"} {
				assert.Equal(t, slices.Concat(tc.want, []float64{math.Inf(1)}), bounds(t, c, name), name)
			}
		})
	}
}

// bounds returns the upper bounds of the buckets of the unlabelled
// histogram name, +Inf last if it is there.
func bounds(t *testing.T, c prometheus.Collector, name string) []float64 {
	t.Helper()
	var b []float64
	for _, bk := range histogram(t, c, name).GetBucket() {
		b = append(b, bk.GetUpperBound())
	}
	if len(b) == 0 || !math.IsInf(b[len(b)-1], 1) {
		b = append(b, math.Inf(1)) // the text format's implied +Inf
	}
	return b
}
