package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scrapeFamilies gets /metrics from base over HTTP and parses it as the
// Prometheus text format.
func scrapeFamilies(t *testing.T, client *http.Client, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := client.Get(base + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, expfmt.TypeTextPlain, expfmt.ResponseFormat(resp.Header).FormatType())
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return families
}

// value returns the value of the sample of family f whose labels include
// every name=value pair of want, failing if there is not exactly one.
func value(t *testing.T, families map[string]*dto.MetricFamily, f string, want ...string) float64 {
	t.Helper()
	mf, ok := families[f]
	require.True(t, ok, "no family %s", f)
	var found []float64
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i < len(want); i += 2 {
			match = match && labels[want[i]] == want[i+1]
		}
		if match {
			found = append(found, m.GetGauge().GetValue()+m.GetCounter().GetValue()+float64(m.GetHistogram().GetSampleCount()))
		}
	}
	require.Len(t, found, 1, "%s%v", f, want)
	return found[0]
}

func TestMetricsEndpointServesPrometheusText(t *testing.T) {
	gate := make(chan struct{})
	placed := make(chan struct{}, 8)
	svc, err := newService(config{
		limits:     map[string]int{"acme": 2},
		queue:      0, // a request that cannot start at once gets 429
		global:     8,
		labelled:   []string{"acme"},
		executorID: "test",
		work: func(ctx context.Context) (string, error) {
			<-gate
			return "done", nil
		},
		placed: func(string) { placed <- struct{}{} },
	})
	require.NoError(t, err)
	srv := httptest.NewServer(svc.handler())
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()

	var running sync.WaitGroup
	for range 2 {
		running.Go(func() { assert.Equal(t, http.StatusOK, post(t.Context(), client, srv.URL, "acme")) })
	}
	<-placed
	<-placed
	assert.Equal(t, http.StatusTooManyRequests, post(t.Context(), client, srv.URL, "acme"))
	<-placed

	during := scrapeFamilies(t, client, srv.URL)
	assert.Equal(t, 2.0, value(t, during, "groupconc_tasks", "group", "acme", "state", "running", "executor", "test"))
	assert.Equal(t, 0.0, value(t, during, "groupconc_tasks", "group", "acme", "state", "waiting"))
	assert.Equal(t, 2.0, value(t, during, "groupconc_global_inflight"))
	assert.Equal(t, 8.0, value(t, during, "groupconc_global_inflight_limit"))
	assert.Equal(t, 1.0, value(t, during, "groupconc_tasks_rejected_total", "group", "acme", "reason", "group_queue_full"))

	close(gate)
	running.Wait()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, svc.drain(ctx))

	after := scrapeFamilies(t, client, srv.URL)
	for _, f := range []string{
		"groupconc_tasks", "groupconc_global_inflight", "groupconc_global_inflight_limit",
		"groupconc_groups", "groupconc_tasks_submitted_total", "groupconc_tasks_completed_total",
		"groupconc_task_wait_seconds", "groupconc_task_run_seconds", "groupconc_tasks_rejected_total",
		"groupconc_oldest_wait_seconds",
	} {
		assert.Contains(t, after, f)
	}
	assert.Equal(t, dto.MetricType_HISTOGRAM, after["groupconc_task_wait_seconds"].GetType())
	assert.Equal(t, 3.0, value(t, after, "groupconc_tasks_submitted_total"))
	assert.Equal(t, 2.0, value(t, after, "groupconc_tasks_completed_total", "status", "success"))
	assert.Equal(t, 1.0, value(t, after, "groupconc_tasks_completed_total", "status", "rejected"))
	assert.Equal(t, 2.0, value(t, after, "groupconc_task_wait_seconds", "group", "acme"))
	assert.Equal(t, 2.0, value(t, after, "groupconc_task_run_seconds", "group", "acme"))
	assert.Equal(t, 0.0, value(t, after, "groupconc_tasks", "group", "acme", "state", "running"))
}

func TestRunPrintsBothScrapes(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out))
	got := out.String()
	for _, line := range []string{
		`groupconc_tasks{executor="api",group="acme",state="running"} 4`,
		`groupconc_tasks{executor="api",group="acme",state="waiting"} 4`,
		`groupconc_tasks{executor="api",group="_other",state="waiting"} 4`,
		`groupconc_global_inflight{executor="api"} 20`,
		`groupconc_tasks_rejected_total{executor="api",group="acme",reason="group_queue_full"} 2`,
		`acme      200 × 8, 429 × 2`,
		`groupconc_tasks_completed_total{executor="api",status="success"} 20`,
		`groupconc_task_wait_seconds_count{executor="api",group="_other"} 6`,
	} {
		assert.True(t, strings.Contains(got, line), "output lacks %q:\n%s", line, got)
	}
}
