package promgc_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// newExecutor builds b's policy and an executor that is shut down, waiting
// for its tasks, when the test ends.
func newExecutor(t testing.TB, b *groupconc.PolicyBuilder) *groupconc.GroupExecutor {
	t.Helper()
	p, err := b.Build()
	require.NoError(t, err)
	e := groupconc.New(p)
	t.Cleanup(func() { require.NoError(t, e.Shutdown(context.Background())) })
	return e
}

// quiesce shuts e down: once it returns, every task has ended and the
// listener has heard of it (a handle completes before its OnCompleted).
func quiesce(t testing.TB, e *groupconc.GroupExecutor) {
	t.Helper()
	require.NoError(t, e.Shutdown(context.Background()))
}

// newMetrics returns a Metrics of o and an executor of b with its listener
// installed, and the collector of that executor.
func newMetrics(t testing.TB, o promgc.Options, b *groupconc.PolicyBuilder) (*groupconc.GroupExecutor, *promgc.Collector) {
	t.Helper()
	m, err := promgc.New(o)
	require.NoError(t, err)
	e := newExecutor(t, b.TaskLifecycleListener(m.Listener()))
	return e, m.Collector(e)
}

var taskIDs atomic.Int64

// submit submits task to key's group with a fresh task ID.
func submit(t testing.TB, e *groupconc.GroupExecutor, key string, task groupconc.Task[int]) *groupconc.TaskHandle[int] {
	t.Helper()
	return submitCtx(t, context.Background(), e, key, task)
}

func submitCtx(t testing.TB, ctx context.Context, e *groupconc.GroupExecutor, key string, task groupconc.Task[int]) *groupconc.TaskHandle[int] {
	t.Helper()
	h, err := groupconc.Submit(ctx, e, key, fmt.Sprint("t", taskIDs.Add(1)), task)
	require.NoError(t, err)
	return h
}

// gate is a task that tells when it starts and runs until the gate opens.
type gate struct {
	started chan struct{}
	open    chan struct{}
	once    sync.Once
}

// newGate returns a closed gate that opens, at the latest, as the test
// ends, before the executors made earlier are shut down.
func newGate(t testing.TB) *gate {
	g := &gate{started: make(chan struct{}, 1024), open: make(chan struct{})}
	t.Cleanup(g.release)
	return g
}

// release opens the gate.
func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

func (g *gate) task(context.Context) (int, error) {
	g.started <- struct{}{}
	<-g.open
	return 0, nil
}

// waitStarted waits until n tasks of g have started.
func (g *gate) waitStarted(n int) {
	for range n {
		<-g.started
	}
}

// sleeper returns a task that sleeps d: inside a synctest bubble, d of fake
// time.
func sleeper(d time.Duration) groupconc.Task[int] {
	return func(context.Context) (int, error) {
		time.Sleep(d)
		return 0, nil
	}
}

func ok(context.Context) (int, error) { return 0, nil }

// families are the type and help of every metric promgc exports.
var families = map[string][2]string{
	"groupconc_tasks":                 {"gauge", "Tasks accepted and not finished, by state: running (holding their group's concurrency permit) or waiting."},
	"groupconc_groups":                {"gauge", "Groups the executor knows: used and not evicted."},
	"groupconc_oldest_wait_seconds":   {"gauge", "How long the oldest waiting task has waited since Submit; 0 if none waits."},
	"groupconc_global_inflight":       {"gauge", "Tasks holding a global in-flight permit."},
	"groupconc_global_inflight_limit": {"gauge", "The global in-flight limit; absent when unlimited."},
	"groupconc_tasks_submitted_total": {"counter", "Tasks Submit accepted."},
	"groupconc_tasks_completed_total": {"counter", "Tasks that ended, by the status their handle reports."},
	"groupconc_task_wait_seconds":     {"histogram", "How long tasks that ran waited for their permits, from Submit to start."},
	"groupconc_task_run_seconds":      {"histogram", "How long task functions ran."},
	"groupconc_tasks_rejected_total":  {"counter", "Tasks a queue threshold turned away, by reason, whatever the rejection policy then did with them."},
}

// requireMetrics compares what c exports of the families named in samples
// with samples, lines of the text format without HELP and TYPE lines.
func requireMetrics(t testing.TB, c prometheus.Collector, samples string) {
	t.Helper()
	byFamily := map[string][]string{}
	var names []string
	for line := range strings.Lines(strings.TrimSpace(samples)) {
		line = strings.TrimSpace(line)
		name, _, _ := strings.Cut(strings.Fields(line)[0], "{")
		if _, ok := families[name]; !ok {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(name, suffix); ok && families[base][0] == "histogram" {
					name = base
				}
			}
		}
		_, ok := families[name]
		require.True(t, ok, "unknown metric in %q", line)
		if _, seen := byFamily[name]; !seen {
			names = append(names, name)
		}
		byFamily[name] = append(byFamily[name], line)
	}
	var want strings.Builder
	for _, name := range names {
		f := families[name]
		fmt.Fprintf(&want, "# HELP %s %s\n# TYPE %s %s\n", name, f[1], name, f[0])
		for _, line := range byFamily[name] {
			want.WriteString(line + "\n")
		}
	}
	require.NoError(t, testutil.CollectAndCompare(c, strings.NewReader(want.String()), names...))
}

// histogramCount returns the sample count of the unlabelled histogram name.
func histogramCount(t testing.TB, c prometheus.Collector, name string) uint64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			require.Len(t, mf.GetMetric(), 1)
			return mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func labelPair(name, value string) *dto.LabelPair {
	return &dto.LabelPair{Name: &name, Value: &value}
}
