package promgc

import (
	"iter"
	"strings"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc/internal/grouplabel"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector is a prometheus.Collector of one executor's metrics, made by
// Metrics.Collector. It reads the executor's Stats and walks its groups
// once per scrape (AllGroupStats, or ActiveGroupStats with
// Options.ActiveGroupsOnly). It does nothing between scrapes. Register it
// once. It is safe for concurrent use. Its zero value is not usable.
type Collector struct {
	m *Metrics
	e *groupconc.GroupExecutor
}

// statuses are the outcome counters of ExecutorStats, as status label values.
var statuses = [...]string{
	strings.ToLower(groupconc.StatusSuccess.String()),
	strings.ToLower(groupconc.StatusFailed.String()),
	strings.ToLower(groupconc.StatusCancelled.String()),
	strings.ToLower(groupconc.StatusRejected.String()),
}

// Describe sends the descriptions of every metric c may export.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	m := c.m
	for _, d := range []*prometheus.Desc{m.tasks, m.globalInFlight, m.globalLimit, m.groups, m.concLimit, m.submitted, m.completed, m.oldestWait, m.blocked, m.paused, m.oldestRunning, m.waitingGlobal} {
		ch <- d
	}
	if m.groupLabel != nil {
		ch <- m.groupEnded
	}
	ch <- m.wait
	ch <- m.run
	m.rejected.Describe(ch)
}

// walk returns the groups a scrape reads.
func (c *Collector) walk() iter.Seq[groupconc.GroupStats] {
	if c.m.activeOnly {
		return c.e.ActiveGroupStats()
	}
	return c.e.AllGroupStats()
}

// Collect reads the executor and sends its metrics, and the listener's if
// Metrics.Listener was called.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	s := c.e.Stats()
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	counter := func(d *prometheus.Desc, v uint64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), lv...)
	}

	gauge(m.globalInFlight, float64(s.GlobalInFlight))
	if s.GlobalMaxInFlight != groupconc.Unlimited {
		gauge(m.globalLimit, float64(s.GlobalMaxInFlight))
	}
	counter(m.submitted, s.Submitted)
	for i, n := range [...]uint64{s.Succeeded, s.Failed, s.Cancelled, s.Rejected} {
		counter(m.completed, n, statuses[i])
	}

	if m.groupLabel == nil {
		// The executor's own totals, which also count tasks of evicted
		// groups still finishing. Only the oldest wait and the limits
		// need the groups.
		var a grouplabel.Sums
		for _, g := range grouplabel.Own(c.walk(), grouplabel.ParentOf(c.e)) {
			a.Add(g)
		}
		gauge(m.tasks, float64(s.Running), "running")
		gauge(m.tasks, float64(s.Waiting), "waiting")
		gauge(m.groups, float64(s.Groups))
		gauge(m.concLimit, float64(a.Limit))
		gauge(m.oldestWait, a.OldestWait.Seconds())
		gauge(m.blocked, float64(s.Blocked))
		gauge(m.paused, float64(a.Paused))
		gauge(m.oldestRunning, a.OldestRunning.Seconds())
		gauge(m.waitingGlobal, float64(a.WaitingGlobal))
	} else {
		c.collectGrouped(gauge)
	}

	if m.listening.Load() {
		m.labels.Each(func(_ string, s *series) {
			s.durations.collect(ch, m.wait, m.run, s.labelValues)
		})
		m.rejected.Collect(ch)
	}
}

// collectGrouped sends the per-group gauges summed by group label value.
// Every value admitted so far is sent, at 0 if none of its groups is left,
// so that a value's series do not come and go with its groups.
func (c *Collector) collectGrouped(gauge func(d *prometheus.Desc, v float64, lv ...string)) {
	m := c.m
	aggs := make(map[string]*grouplabel.Sums)
	for _, g := range grouplabel.Own(c.walk(), grouplabel.ParentOf(c.e)) {
		_, v := m.labels.Series(g.GroupKey)
		a := aggs[v]
		if a == nil {
			a = &grouplabel.Sums{}
			aggs[v] = a
		}
		a.Add(g)
	}
	m.labels.Each(func(v string, _ *series) {
		a := aggs[v]
		if a == nil {
			a = &grouplabel.Sums{}
		}
		gauge(m.tasks, float64(a.Running), "running", v)
		gauge(m.tasks, float64(a.Waiting), "waiting", v)
		gauge(m.groups, float64(a.Groups), v)
		gauge(m.concLimit, float64(a.Limit), v)
		gauge(m.oldestWait, a.OldestWait.Seconds(), v)
		gauge(m.blocked, float64(a.Blocked), v)
		gauge(m.paused, float64(a.Paused), v)
		gauge(m.oldestRunning, a.OldestRunning.Seconds(), v)
		gauge(m.waitingGlobal, float64(a.WaitingGlobal), v)
		for i, n := range a.Ended {
			gauge(m.groupEnded, float64(n), statuses[i], v)
		}
	})
}
