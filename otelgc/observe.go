package otelgc

import (
	"context"
	"errors"
	"iter"
	"strings"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc/internal/grouplabel"
	"go.opentelemetry.io/otel/metric"
)

var errObserved = errors.New("otelgc: Observe called twice on one Metrics")

// statuses are the outcome counters of ExecutorStats, as attribute values.
var statuses = [...]string{
	strings.ToLower(groupconc.StatusSuccess.String()),
	strings.ToLower(groupconc.StatusFailed.String()),
	strings.ToLower(groupconc.StatusCancelled.String()),
	strings.ToLower(groupconc.StatusRejected.String()),
}

// Observe registers a callback that reads e's Stats, and walks its groups
// once (AllGroupStats, or ActiveGroupStats with Options.ActiveGroupsOnly),
// at each collection. Nothing is spent between collections. Unregister
// the returned Registration when e is no longer to be reported. A Metrics
// observes one executor. A second call returns an error. Observe panics
// if e is nil.
func (m *Metrics) Observe(e *groupconc.GroupExecutor) (metric.Registration, error) {
	if e == nil {
		panic("otelgc: Observe of a nil executor")
	}
	if !m.observed.CompareAndSwap(false, true) {
		return nil, errObserved
	}
	cb := func(_ context.Context, o metric.Observer) error {
		m.observe(e, o)
		return nil
	}
	reg, err := m.meter.RegisterCallback(cb, m.tasks, m.groups, m.concLimit, m.oldestWait, m.blocked, m.inFlight, m.inFlightLimit, m.submitted, m.completed,
		m.paused, m.oldestRunning, m.waitingGlobal, m.groupEnded)
	if err != nil {
		m.observed.Store(false)
		return nil, errors.Join(errors.New("otelgc: registering the callback"), err)
	}
	return reg, nil
}

// walk returns the groups a collection reads.
func (m *Metrics) walk(e *groupconc.GroupExecutor) iter.Seq[groupconc.GroupStats] {
	if m.activeOnly {
		return e.ActiveGroupStats()
	}
	return e.AllGroupStats()
}

// observe reports e's state to o.
func (m *Metrics) observe(e *groupconc.GroupExecutor, o metric.Observer) {
	s := e.Stats()
	base := metric.WithAttributeSet(m.attrs(""))
	o.ObserveInt64(m.inFlight, int64(s.GlobalInFlight), base)
	if s.GlobalMaxInFlight != groupconc.Unlimited {
		o.ObserveInt64(m.inFlightLimit, int64(s.GlobalMaxInFlight), base)
	}
	o.ObserveInt64(m.submitted, int64(s.Submitted), base)
	for i, n := range [...]uint64{s.Succeeded, s.Failed, s.Cancelled, s.Rejected} {
		o.ObserveInt64(m.completed, int64(n), metric.WithAttributeSet(m.attrs("", AttrTaskStatus.String(statuses[i]))))
	}

	if !m.labels.Enabled() {
		// The executor's own totals, which also count tasks of evicted
		// groups still finishing. Only the oldest wait and the limits
		// need the groups.
		var a grouplabel.Sums
		for _, g := range grouplabel.Own(m.walk(e), grouplabel.ParentOf(e)) {
			a.Add(g)
		}
		a.Running, a.Waiting, a.Groups, a.Blocked = s.Running, s.Waiting, s.Groups, s.Blocked
		m.observeGroups("", a, o)
		return
	}
	// Every value admitted so far is reported, at 0 if none of its groups
	// is left, so that a value's series do not come and go with its groups.
	aggs := make(map[string]*grouplabel.Sums)
	for _, g := range grouplabel.Own(m.walk(e), grouplabel.ParentOf(e)) {
		_, v := m.labels.Series(g.GroupKey)
		a := aggs[v]
		if a == nil {
			a = &grouplabel.Sums{}
			aggs[v] = a
		}
		a.Add(g)
	}
	m.labels.Each(func(v string, _ *series) {
		var a grouplabel.Sums
		if p := aggs[v]; p != nil {
			a = *p
		}
		m.observeGroups(v, a, o)
	})
}

// observeGroups reports the per-group instruments of one group attribute
// value ("" when the attribute is off).
func (m *Metrics) observeGroups(v string, a grouplabel.Sums, o metric.Observer) {
	o.ObserveInt64(m.tasks, int64(a.Running), metric.WithAttributeSet(m.attrs(v, AttrTaskState.String("running"))))
	o.ObserveInt64(m.tasks, int64(a.Waiting), metric.WithAttributeSet(m.attrs(v, AttrTaskState.String("waiting"))))
	o.ObserveInt64(m.groups, int64(a.Groups), metric.WithAttributeSet(m.attrs(v)))
	o.ObserveInt64(m.concLimit, int64(a.Limit), metric.WithAttributeSet(m.attrs(v)))
	o.ObserveFloat64(m.oldestWait, a.OldestWait.Seconds(), metric.WithAttributeSet(m.attrs(v)))
	o.ObserveInt64(m.blocked, int64(a.Blocked), metric.WithAttributeSet(m.attrs(v)))
	o.ObserveInt64(m.paused, int64(a.Paused), metric.WithAttributeSet(m.attrs(v)))
	o.ObserveFloat64(m.oldestRunning, a.OldestRunning.Seconds(), metric.WithAttributeSet(m.attrs(v)))
	o.ObserveInt64(m.waitingGlobal, int64(a.WaitingGlobal), metric.WithAttributeSet(m.attrs(v)))
	if v == "" {
		return // without the group attribute, groupconc.task.completed tells the same
	}
	for i, n := range a.Ended {
		o.ObserveInt64(m.groupEnded, int64(n), metric.WithAttributeSet(m.attrs(v, AttrTaskStatus.String(statuses[i]))))
	}
}
