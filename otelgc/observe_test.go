package otelgc_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
)

// none is the key of the empty attribute set.
const none = ""

func TestObserveReportsTasksGroupsAndTheGlobalLayer(t *testing.T) {
	e, r := newMetrics(t, otelgc.Options{}, groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(map[string]int{"a": 2}).
		GlobalMaxInFlight(8))
	g := newGate(t)
	var hs []*groupconc.TaskHandle[int]
	for range 5 {
		hs = append(hs, submit(t, e, "a", g.Task))
	}
	hs = append(hs, submit(t, e, "b", g.Task))
	g.WaitStarted(3)

	// Every task holds a global permit, waiting ones included.
	requirePoints(t, r, map[string]map[string]float64{
		"groupconc.task.count":              {"groupconc.task.state=running": 3, "groupconc.task.state=waiting": 3},
		"groupconc.global.inflight.usage":   {none: 6},
		"groupconc.global.inflight.limit":   {none: 8},
		"groupconc.group.count":             {none: 2},
		"groupconc.group.concurrency.limit": {none: 3},
		"groupconc.task.submitted":          {none: 6},
		"groupconc.task.completed": {
			"groupconc.task.status=success": 0, "groupconc.task.status=failed": 0,
			"groupconc.task.status=cancelled": 0, "groupconc.task.status=rejected": 0,
		},
	})

	g.Release()
	for _, h := range hs {
		h.Wait()
	}
	requirePoints(t, r, map[string]map[string]float64{
		"groupconc.task.count":            {"groupconc.task.state=running": 0, "groupconc.task.state=waiting": 0},
		"groupconc.global.inflight.usage": {none: 0},
		"groupconc.task.oldest_wait":      {none: 0},
		"groupconc.task.completed": {
			"groupconc.task.status=success": 6, "groupconc.task.status=failed": 0,
			"groupconc.task.status=cancelled": 0, "groupconc.task.status=rejected": 0,
		},
	})
}

func TestGlobalLimitIsNotReportedWhenUnlimited(t *testing.T) {
	e, r := newMetrics(t, otelgc.Options{}, groupconc.NewPolicyBuilder())
	submit(t, e, "a", ok).Wait()
	got := collect(t, r)
	assert.NotContains(t, got, "groupconc.global.inflight.limit")
	assert.Contains(t, got, "groupconc.global.inflight.usage")
}

func TestCountersCountOutcomesAndRejectionsByReason(t *testing.T) {
	e, r := newMetrics(t, otelgc.Options{}, groupconc.NewPolicyBuilder().
		GlobalMaxInFlight(3).
		GlobalQueueThreshold(0).
		DefaultQueueThresholdPerGroup(0))
	g := newGate(t)
	running := []*groupconc.TaskHandle[int]{submit(t, e, "a", g.Task), submit(t, e, "b", g.Task)}
	g.WaitStarted(2)
	// The global layer has a permit left; a's group has none.
	assert.Equal(t, groupconc.StatusRejected, submit(t, e, "a", ok).Wait().Status)
	running = append(running, submit(t, e, "c", g.Task))
	g.WaitStarted(1)
	// Now the global layer is full.
	assert.Equal(t, groupconc.StatusRejected, submit(t, e, "d", ok).Wait().Status)
	g.Release()
	for _, h := range running {
		h.Wait()
	}
	assert.Equal(t, groupconc.StatusFailed, submit(t, e, "d", func(context.Context) (int, error) {
		return 0, errors.New("boom")
	}).Wait().Status)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Equal(t, groupconc.StatusCancelled, submitCtx(t, ctx, e, "d", ok).Wait().Status)
	quiesce(t, e)

	requirePoints(t, r, map[string]map[string]float64{
		"groupconc.task.submitted": {none: 7},
		"groupconc.task.completed": {
			"groupconc.task.status=success": 3, "groupconc.task.status=failed": 1,
			"groupconc.task.status=cancelled": 1, "groupconc.task.status=rejected": 2,
		},
		"groupconc.task.rejected": {
			"groupconc.rejection.reason=global_queue_full": 1,
			"groupconc.rejection.reason=group_queue_full":  1,
		},
		// The four tasks that ran; not the cancelled one, nor the rejected.
		"groupconc.task.wait.duration": {none: 4},
		"groupconc.task.run.duration":  {none: 4},
	})
}

func TestHistogramsRecordWaitAndRunDurations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, r := newMetrics(t, otelgc.Options{Buckets: []float64{1, 2.5}}, groupconc.NewPolicyBuilder())
		first := submit(t, e, "a", sleeper(2*time.Second))
		second := submit(t, e, "a", sleeper(500*time.Millisecond)) // waits for first
		first.Wait()
		second.Wait()
		synctest.Wait() // the listener has heard of both
		got := collect(t, r)
		point := func(sum, lo, hi float64) metricdata.HistogramDataPoint[float64] {
			return metricdata.HistogramDataPoint[float64]{
				Count: 2, Bounds: []float64{1, 2.5}, BucketCounts: []uint64{1, 1, 0}, Sum: sum,
				Min: metricdata.NewExtrema(lo), Max: metricdata.NewExtrema(hi),
			}
		}
		for name, want := range map[string]metricdata.HistogramDataPoint[float64]{
			"groupconc.task.wait.duration": point(2, 0, 2),
			"groupconc.task.run.duration":  point(2.5, 0.5, 2),
		} {
			h, ok := got[name].Data.(metricdata.Histogram[float64])
			require.True(t, ok, name)
			require.Len(t, h.DataPoints, 1, name)
			metricdatatest.AssertEqual(t, want, h.DataPoints[0], metricdatatest.IgnoreTimestamp())
		}
	})
}

func TestHistogramsLeaveOutTasksCancelledWhileWaiting(t *testing.T) {
	e, r := newMetrics(t, otelgc.Options{}, groupconc.NewPolicyBuilder())
	g := newGate(t)
	running := submit(t, e, "a", g.Task)
	waiting := submit(t, e, "a", g.Task)
	g.WaitStarted(1)
	require.True(t, waiting.Cancel())
	g.Release()
	running.Wait()
	quiesce(t, e)
	requirePoints(t, r, map[string]map[string]float64{
		"groupconc.task.wait.duration": {none: 1},
		"groupconc.task.completed": {
			"groupconc.task.status=success": 1, "groupconc.task.status=failed": 0,
			"groupconc.task.status=cancelled": 1, "groupconc.task.status=rejected": 0,
		},
	})
}

func TestUnregisterStopsReporting(t *testing.T) {
	r, mp := newReader(t)
	m, err := otelgc.New(otelgc.Options{MeterProvider: mp})
	require.NoError(t, err)
	e := newExecutor(t, groupconc.NewPolicyBuilder())
	reg, err := m.Observe(e)
	require.NoError(t, err)
	assert.Contains(t, collect(t, r), "groupconc.task.submitted")
	require.NoError(t, reg.Unregister())
	assert.NotContains(t, collect(t, r), "groupconc.task.submitted")
}

func TestObserveTwiceIsAnError(t *testing.T) {
	_, mp := newReader(t)
	m, err := otelgc.New(otelgc.Options{MeterProvider: mp})
	require.NoError(t, err)
	e := newExecutor(t, groupconc.NewPolicyBuilder())
	reg, err := m.Observe(e)
	require.NoError(t, err)
	defer reg.Unregister()
	_, err = m.Observe(e)
	assert.EqualError(t, err, "otelgc: Observe called twice on one Metrics")
}

func TestObservePanicsOnANilExecutor(t *testing.T) {
	_, mp := newReader(t)
	m, err := otelgc.New(otelgc.Options{MeterProvider: mp})
	require.NoError(t, err)
	assert.Panics(t, func() { m.Observe(nil) })
}

// halving is an adaptive limit that halves the limit each task ends under.
type halving struct{}

func (halving) Observe(s groupconc.LimitSample) int { return s.Limit / 2 }

func TestObserveReportsTheAdaptiveLimitsInForce(t *testing.T) {
	e, r := newMetrics(t, otelgc.Options{}, groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare).
		DefaultMaxConcurrencyPerGroup(8).
		PerGroupMaxConcurrency(map[string]int{"free": groupconc.Unlimited}).
		GlobalMaxInFlight(16).
		AdaptiveConcurrency(groupconc.AdaptiveConfig{New: func(string, int, int) groupconc.AdaptiveLimit { return halving{} }}).
		AdaptiveGlobal(groupconc.AdaptiveConfig{New: func(string, int, int) groupconc.AdaptiveLimit { return halving{} }}))
	submit(t, e, "a", ok).Wait()
	submit(t, e, "free", ok).Wait()
	requirePoints(t, r, map[string]map[string]float64{
		"groupconc.group.concurrency.limit": {none: 4},
		"groupconc.global.inflight.limit":   {none: 4},
	})
}
