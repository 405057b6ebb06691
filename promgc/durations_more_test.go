package promgc_test

import (
	"math"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
)

// A bound longer than any time.Duration is still a bound: a task shorter
// than it is counted in its bucket, not only under +Inf.
func TestABucketBoundPastTheLongestDurationTakesTheTasksBelowIt(t *testing.T) {
	for _, top := range []float64{1e10, math.MaxFloat64} {
		synctest.Test(t, func(t *testing.T) {
			e, c := newMetrics(t, promgc.Options{Buckets: []float64{1, top}}, groupconc.NewPolicyBuilder())
			submit(t, e, "a", sleeper(2*time.Second)).Wait()
			synctest.Wait() // the listener has heard of the task
			h := histogram(t, c, "groupconc_task_run_seconds")
			require.Len(t, h.GetBucket(), 2, "top %v", top)
			assert.Equal(t, uint64(0), h.GetBucket()[0].GetCumulativeCount(), "top %v", top)
			assert.Equal(t, top, h.GetBucket()[1].GetUpperBound())
			assert.Equal(t, uint64(1), h.GetBucket()[1].GetCumulativeCount(), "top %v", top)
			assert.Equal(t, uint64(1), h.GetSampleCount(), "top %v", top)
		})
	}
}

// setGOMAXPROCS sets GOMAXPROCS to n until the test ends.
func setGOMAXPROCS(t *testing.T, n int) {
	prev := runtime.GOMAXPROCS(n)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
}

// The histograms are made for the GOMAXPROCS of the moment: one CPU, a
// number that is not a power of two, or more CPUs than the histograms
// spread over. Every task is counted whatever it is.
func TestHistogramsCountEveryTaskAtAnyGOMAXPROCS(t *testing.T) {
	for _, procs := range []int{1, 3, 64} {
		setGOMAXPROCS(t, procs)
		e, c := newMetrics(t, promgc.Options{}, groupconc.NewPolicyBuilder())
		var hs []*groupconc.TaskHandle[int]
		for range 50 {
			hs = append(hs, submit(t, e, "a", ok))
		}
		for _, h := range hs {
			h.Wait()
		}
		quiesce(t, e)
		assert.Equal(t, uint64(50), histogramCount(t, c, "groupconc_task_wait_seconds"), "GOMAXPROCS %d", procs)
		assert.Equal(t, uint64(50), histogramCount(t, c, "groupconc_task_run_seconds"), "GOMAXPROCS %d", procs)
	}
}

// Making the histograms reads GOMAXPROCS; it never sets it.
func TestHistogramsLeaveGOMAXPROCSAsItWas(t *testing.T) {
	setGOMAXPROCS(t, 3)
	e, c := newMetrics(t, promgc.Options{}, groupconc.NewPolicyBuilder())
	submit(t, e, "a", ok).Wait()
	quiesce(t, e)
	assert.Equal(t, uint64(1), histogramCount(t, c, "groupconc_task_run_seconds"))
	assert.Equal(t, 3, runtime.GOMAXPROCS(0))
}

// A task longer than every bound is counted under +Inf alone, and in the
// count and sum.
func TestATaskPastEveryBoundIsCountedUnderInfOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, c := newMetrics(t, promgc.Options{Buckets: []float64{1}}, groupconc.NewPolicyBuilder())
		submit(t, e, "a", sleeper(2*time.Second)).Wait()
		submit(t, e, "a", ok).Wait()
		synctest.Wait() // the listener has heard of both
		requireMetrics(t, c, `
			groupconc_task_run_seconds_bucket{le="1"} 1
			groupconc_task_run_seconds_bucket{le="+Inf"} 2
			groupconc_task_run_seconds_sum 2
			groupconc_task_run_seconds_count 2
		`)
	})
}
