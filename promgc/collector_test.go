package promgc_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCollectorReportsTasksGroupsAndTheGlobalLayer(t *testing.T) {
	e, c := newMetrics(t, promgc.Options{}, groupconc.NewPolicyBuilder().
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
	requireMetrics(t, c, `
		groupconc_tasks{state="running"} 3
		groupconc_tasks{state="waiting"} 3
		groupconc_global_inflight 6
		groupconc_global_inflight_limit 8
		groupconc_groups 2
		groupconc_concurrency_limit 3
		groupconc_tasks_submitted_total 6
		groupconc_tasks_completed_total{status="success"} 0
		groupconc_tasks_completed_total{status="failed"} 0
		groupconc_tasks_completed_total{status="cancelled"} 0
		groupconc_tasks_completed_total{status="rejected"} 0
	`)

	g.Release()
	for _, h := range hs {
		h.Wait()
	}
	requireMetrics(t, c, `
		groupconc_tasks{state="running"} 0
		groupconc_tasks{state="waiting"} 0
		groupconc_global_inflight 0
		groupconc_oldest_wait_seconds 0
		groupconc_tasks_completed_total{status="success"} 6
		groupconc_tasks_completed_total{status="failed"} 0
		groupconc_tasks_completed_total{status="cancelled"} 0
		groupconc_tasks_completed_total{status="rejected"} 0
	`)
}

func TestGlobalLimitIsAbsentWhenUnlimited(t *testing.T) {
	e, c := newMetrics(t, promgc.Options{}, groupconc.NewPolicyBuilder())
	submit(t, e, "a", ok).Wait()
	assert.Equal(t, 0, testutil.CollectAndCount(c, "groupconc_global_inflight_limit"))
	assert.Equal(t, 1, testutil.CollectAndCount(c, "groupconc_global_inflight"))
}

func TestCountersCountOutcomesAndRejectionsByReason(t *testing.T) {
	e, c := newMetrics(t, promgc.Options{}, groupconc.NewPolicyBuilder().
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

	requireMetrics(t, c, `
		groupconc_tasks_submitted_total 7
		groupconc_tasks_completed_total{status="success"} 3
		groupconc_tasks_completed_total{status="failed"} 1
		groupconc_tasks_completed_total{status="cancelled"} 1
		groupconc_tasks_completed_total{status="rejected"} 2
		groupconc_tasks_rejected_total{reason="displaced"} 0
		groupconc_tasks_rejected_total{reason="global_queue_full"} 1
		groupconc_tasks_rejected_total{reason="group_queue_full"} 1
		groupconc_tasks_rejected_total{reason="wait_timeout"} 0
	`)
	// The four tasks that ran; not the cancelled one, nor the rejected.
	assert.Equal(t, uint64(4), histogramCount(t, c, "groupconc_task_wait_seconds"))
	assert.Equal(t, uint64(4), histogramCount(t, c, "groupconc_task_run_seconds"))
}

func TestHistogramsObserveWaitAndRunTimes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, c := newMetrics(t, promgc.Options{Buckets: []float64{1, 2.5}}, groupconc.NewPolicyBuilder())
		first := submit(t, e, "a", sleeper(2*time.Second))
		second := submit(t, e, "a", sleeper(time.Second)) // waits for first; on a bound

		first.Wait()
		second.Wait()
		synctest.Wait() // the listener has heard of both
		requireMetrics(t, c, `
			groupconc_task_wait_seconds_bucket{le="1"} 1
			groupconc_task_wait_seconds_bucket{le="2.5"} 2
			groupconc_task_wait_seconds_bucket{le="+Inf"} 2
			groupconc_task_wait_seconds_sum 2
			groupconc_task_wait_seconds_count 2
			groupconc_task_run_seconds_bucket{le="1"} 1
			groupconc_task_run_seconds_bucket{le="2.5"} 2
			groupconc_task_run_seconds_bucket{le="+Inf"} 2
			groupconc_task_run_seconds_sum 3
			groupconc_task_run_seconds_count 2
		`)
	})
}

func TestHistogramsLeaveOutTasksCancelledWhileWaiting(t *testing.T) {
	e, c := newMetrics(t, promgc.Options{}, groupconc.NewPolicyBuilder())
	g := newGate(t)
	running := submit(t, e, "a", g.Task)
	waiting := submit(t, e, "a", g.Task)
	g.WaitStarted(1)
	require.True(t, waiting.Cancel())
	g.Release()
	running.Wait()
	quiesce(t, e)
	assert.Equal(t, uint64(1), histogramCount(t, c, "groupconc_task_wait_seconds"))
	requireMetrics(t, c, `groupconc_tasks_completed_total{status="success"} 1
		groupconc_tasks_completed_total{status="failed"} 0
		groupconc_tasks_completed_total{status="cancelled"} 1
		groupconc_tasks_completed_total{status="rejected"} 0`)
}

func TestListenerMetricsAreAbsentWithoutTheListener(t *testing.T) {
	m, err := promgc.New(promgc.Options{})
	require.NoError(t, err)
	e := newExecutor(t, groupconc.NewPolicyBuilder())
	c := m.Collector(e)
	submit(t, e, "a", ok).Wait()
	assert.Equal(t, 0, testutil.CollectAndCount(c, "groupconc_task_wait_seconds", "groupconc_task_run_seconds", "groupconc_tasks_rejected_total"))
	assert.Equal(t, 1, testutil.CollectAndCount(c, "groupconc_tasks_submitted_total"))
}

func TestExecutorNameLabelsEveryMetric(t *testing.T) {
	e, c := newMetrics(t, promgc.Options{ExecutorName: "api"}, groupconc.NewPolicyBuilder().GlobalMaxInFlight(4))
	submit(t, e, "a", ok).Wait()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	assert.Len(t, mfs, len(families)-1, "every family but groupconc_group_tasks_ended, which needs a group label")
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			assert.Contains(t, m.GetLabel(), labelPair("executor", "api"), mf.GetName())
		}
	}
}

func TestCollectorPassesThePedanticRegistryAndLint(t *testing.T) {
	for name, o := range map[string]promgc.Options{
		"plain":   {},
		"grouped": {GroupClass: func(k string) string { return k }, ExecutorName: "api"},
	} {
		t.Run(name, func(t *testing.T) {
			e, c := newMetrics(t, o, groupconc.NewPolicyBuilder().GlobalMaxInFlight(4).DefaultQueueThresholdPerGroup(0))
			g := newGate(t)
			h := submit(t, e, "a", g.Task)
			g.WaitStarted(1)
			submit(t, e, "a", ok).Wait() // rejected
			g.Release()
			h.Wait()
			reg := prometheus.NewPedanticRegistry()
			require.NoError(t, reg.Register(c))
			_, err := reg.Gather()
			require.NoError(t, err)
			problems, err := testutil.CollectAndLint(c)
			require.NoError(t, err)
			assert.Empty(t, problems)
		})
	}
}

func TestCollectorPanicsOnANilExecutor(t *testing.T) {
	m, err := promgc.New(promgc.Options{})
	require.NoError(t, err)
	assert.Panics(t, func() { m.Collector(nil) })
}

// halving is an adaptive limit that halves the limit each task ends under.
type halving struct{}

func (halving) Observe(s groupconc.LimitSample) int { return s.Limit / 2 }

func TestCollectorReportsTheAdaptiveLimitsInForce(t *testing.T) {
	e, c := newMetrics(t, promgc.Options{}, groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare).
		DefaultMaxConcurrencyPerGroup(8).
		PerGroupMaxConcurrency(map[string]int{"free": groupconc.Unlimited}).
		GlobalMaxInFlight(16).
		AdaptiveConcurrency(groupconc.AdaptiveConfig{New: func(string, int, int) groupconc.AdaptiveLimit { return halving{} }}).
		AdaptiveGlobal(groupconc.AdaptiveConfig{New: func(string, int, int) groupconc.AdaptiveLimit { return halving{} }}))
	submit(t, e, "a", ok).Wait()
	submit(t, e, "free", ok).Wait()
	requireMetrics(t, c, `
		groupconc_concurrency_limit 4
		groupconc_global_inflight_limit 4
	`)
}
