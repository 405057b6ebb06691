package promgc_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// newMetrics returns a Metrics of o and an executor of b with its listener
// installed, and the collector of that executor.
func newMetrics(t testing.TB, o promgc.Options, b *groupconc.PolicyBuilder) (*groupconc.GroupExecutor, *promgc.Collector) {
	t.Helper()
	m, err := promgc.New(o)
	require.NoError(t, err)
	e := newExecutor(t, b.TaskLifecycleListener(m.Listener()))
	return e, m.Collector(e)
}

// families are the type and help of every metric promgc exports.
var families = map[string][2]string{
	"groupconc_tasks":                  {"gauge", "Tasks accepted and not finished, by state: running (holding their group's concurrency permit) or waiting."},
	"groupconc_groups":                 {"gauge", "Groups the executor knows: used and not evicted."},
	"groupconc_concurrency_limit":      {"gauge", "The groups' concurrency limits in force (adaptive ones as they stand), summed; groups with no limit are left out."},
	"groupconc_oldest_wait_seconds":    {"gauge", "How long the oldest waiting task has waited since Submit; 0 if none waits."},
	"groupconc_global_inflight":        {"gauge", "Permits of the global in-flight cap held: a task of cost c holds c."},
	"groupconc_global_inflight_limit":  {"gauge", "The global in-flight limit; absent when unlimited."},
	"groupconc_tasks_submitted_total":  {"counter", "Tasks Submit accepted."},
	"groupconc_tasks_completed_total":  {"counter", "Tasks that ended, by the status their handle reports."},
	"groupconc_task_wait_seconds":      {"histogram", "How long tasks that ran waited for their permits, from Submit to start."},
	"groupconc_task_run_seconds":       {"histogram", "How long task functions ran."},
	"groupconc_tasks_rejected_total":   {"counter", "Tasks a queue threshold turned away, by reason, whatever the rejection policy then did with them."},
	"groupconc_blocked_callers":        {"gauge", "Callers of SubmitWith with Block waiting for a queue slot: producers held back, not tasks yet."},
	"groupconc_paused_groups":          {"gauge", "Groups paused: none of their tasks starts. For a group label value of one key, 0 or 1."},
	"groupconc_oldest_running_seconds": {"gauge", "How long the longest-running task has run; 0 if none runs. A task hung in its function shows here."},
	"groupconc_tasks_waiting_global":   {"gauge", "Of the waiting tasks, those waiting for a global in-flight permit: held back by the global cap, not by their group's limits."},
	"groupconc_group_tasks_ended":      {"gauge", "Tasks of the groups read that ended, by status, each since its group was made. A gauge: a group's counts leave it when the group is forgotten or evicted, or idle under ActiveGroupsOnly."},
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
	return histogram(t, c, name).GetSampleCount()
}

// histogram returns the unlabelled histogram name as c exports it.
func histogram(t testing.TB, c prometheus.Collector, name string) *dto.Histogram {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			require.Len(t, mf.GetMetric(), 1)
			return mf.GetMetric()[0].GetHistogram()
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

func labelPair(name, value string) *dto.LabelPair {
	return &dto.LabelPair{Name: &name, Value: &value}
}
