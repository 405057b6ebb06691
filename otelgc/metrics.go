package otelgc

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"unicode/utf8"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/otelgc/internal/grouplabel"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ScopeName is the instrumentation scope of the meter otelgc uses.
const ScopeName = "github.com/kobe/groupconc/otelgc"

// The attributes otelgc sets.
const (
	AttrExecutorName    attribute.Key = "groupconc.executor.name"    // Options.ExecutorName, when set
	AttrGroup           attribute.Key = "groupconc.group"            // the group label, when asked for
	AttrTaskState       attribute.Key = "groupconc.task.state"       // "running" or "waiting"
	AttrTaskStatus      attribute.Key = "groupconc.task.status"      // "success", "failed", "cancelled", "rejected"
	AttrRejectionReason attribute.Key = "groupconc.rejection.reason" // a groupconc.Reason constant (the four OnRejected is sent), or Other
)

// DefaultBuckets are the explicit bucket boundaries, in seconds, of the wait
// and run duration histograms when Options.Buckets is nil: 100µs to 60s,
// three per decade. (The SDK's own default suits milliseconds.)
var DefaultBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// Options configures a Metrics. The zero value records through the global
// MeterProvider, without a group attribute, with DefaultBuckets.
type Options struct {
	// MeterProvider provides the meter. Nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// ExecutorName, if not empty, is the value of a groupconc.executor.name
	// attribute on every measurement, to tell several executors apart.
	// It must be valid UTF-8.
	ExecutorName string
	// GroupClass, if set, turns the groupconc.group attribute on and maps
	// each group key to its value (a tier, a region): groups of one class
	// share time series. An empty class, one not valid UTF-8, or a panic,
	// means Other. A key of the allowlist that is not valid UTF-8 is Other
	// too. It is called for every task the listener sees and every group at
	// each collection, so it must be cheap and safe for concurrent use.
	GroupClass func(groupKey string) string
	// GroupAllowlist, if not empty, turns the groupconc.group attribute on
	// and lists the values kept (keys, or classes when GroupClass is set).
	// Every other group is Other.
	GroupAllowlist []string
	// MaxGroupValues caps the distinct groupconc.group values, Other not
	// counted. The first values seen keep their series, and every later
	// one is Other. 0 means DefaultMaxGroupValues. By default the SDK
	// keeps 1999 attribute sets per instrument, and a value takes up to
	// five, so above 398 raise the SDK's cardinality limit too.
	MaxGroupValues int
	// ActiveGroupsOnly has each collection read only the groups with
	// something going on (ActiveGroupStats), not every group remembered
	// (AllGroupStats). A collection then costs what is active, however
	// many keys the executor remembers. Use it with unbounded keys. The
	// task, wait and blocked instruments are the same either way. The
	// concurrency limits, the ended tasks and, with a group attribute, the
	// groups count the active groups only.
	ActiveGroupsOnly bool
	// Buckets are the explicit bucket boundaries of the duration
	// histograms, in seconds, finite and strictly increasing. Nil means
	// DefaultBuckets. A View registered with the MeterProvider overrides
	// them.
	Buckets []float64
}

// Metrics records one executor's metrics. Make it with New, install its
// Listener in the executor's policy if the histograms and rejection counts
// are wanted, and call Observe once with that executor. The zero value is
// not usable. A Metrics is safe for concurrent use and starts no goroutine.
type Metrics struct {
	meter  metric.Meter
	base   []attribute.KeyValue // the executor name, if set
	labels *grouplabel.Set[*series]

	// Observable instruments, read by the callback Observe registers.
	tasks, groups, concLimit, inFlight, inFlightLimit metric.Int64ObservableUpDownCounter
	submitted, completed                              metric.Int64ObservableCounter
	oldestWait                                        metric.Float64ObservableGauge
	blocked                                           metric.Int64ObservableUpDownCounter
	paused, waitingGlobal, groupEnded                 metric.Int64ObservableUpDownCounter
	oldestRunning                                     metric.Float64ObservableGauge
	observed                                          atomic.Bool
	activeOnly                                        bool // Options.ActiveGroupsOnly

	// Synchronous instruments, fed by the listener.
	wait, run metric.Float64Histogram
	rejected  metric.Int64Counter
}

// series holds the measurement options of one group attribute value,
// built once so that a task costs no attribute set.
type series struct {
	value    string // the group attribute's value, "" if off
	record   []metric.RecordOption
	rejected [len(reasons)][]metric.AddOption // by reason, in the order of reasons
}

// reasons are the rejection reasons the executor sends OnRejected, each
// counted under its own attribute value. Any other (one a later release
// might add) is counted as Other, so the attribute takes at most five
// values.
var reasons = [...]string{
	groupconc.ReasonGlobalQueueFull,
	groupconc.ReasonGroupQueueFull,
	groupconc.ReasonWaitTimeout,
	groupconc.ReasonDisplaced,
}

// New returns a Metrics configured by o, with its instruments created on
// o's meter, or an error naming each invalid option, or the instrument the
// meter would not create.
func New(o Options) (*Metrics, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	mp := o.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := &Metrics{meter: mp.Meter(ScopeName), activeOnly: o.ActiveGroupsOnly}
	if o.ExecutorName != "" {
		m.base = []attribute.KeyValue{AttrExecutorName.String(o.ExecutorName)}
	}
	buckets := o.Buckets
	if buckets == nil {
		buckets = DefaultBuckets
	}
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("otelgc: %w", err))
		}
	}
	var err error
	mt := m.meter
	m.tasks, err = mt.Int64ObservableUpDownCounter("groupconc.task.count", metric.WithUnit("{task}"),
		metric.WithDescription("Tasks accepted and not finished, by state: running (holding their group's concurrency permit) or waiting."))
	check(err)
	m.groups, err = mt.Int64ObservableUpDownCounter("groupconc.group.count", metric.WithUnit("{group}"),
		metric.WithDescription("Groups the executor knows: used and not evicted."))
	check(err)
	m.concLimit, err = mt.Int64ObservableUpDownCounter("groupconc.group.concurrency.limit", metric.WithUnit("{permit}"),
		metric.WithDescription("The groups' concurrency limits in force (adaptive ones as they stand), summed; groups with no limit are left out."))
	check(err)
	m.oldestWait, err = mt.Float64ObservableGauge("groupconc.task.oldest_wait", metric.WithUnit("s"),
		metric.WithDescription("How long the oldest waiting task has waited since Submit; 0 if none waits."))
	check(err)
	m.blocked, err = mt.Int64ObservableUpDownCounter("groupconc.submit.blocked", metric.WithUnit("{caller}"),
		metric.WithDescription("Callers of SubmitWith with Block waiting for a queue slot: producers held back, not tasks yet."))
	check(err)
	m.paused, err = mt.Int64ObservableUpDownCounter("groupconc.group.paused", metric.WithUnit("{group}"),
		metric.WithDescription("Groups paused: none of their tasks starts. For a group attribute value of one key, 0 or 1."))
	check(err)
	m.oldestRunning, err = mt.Float64ObservableGauge("groupconc.task.oldest_running", metric.WithUnit("s"),
		metric.WithDescription("How long the longest-running task has run; 0 if none runs. A task hung in its function shows here."))
	check(err)
	m.waitingGlobal, err = mt.Int64ObservableUpDownCounter("groupconc.task.waiting_global", metric.WithUnit("{task}"),
		metric.WithDescription("Of the waiting tasks, those waiting for a global in-flight permit: held back by the global cap, not by their group's limits."))
	check(err)
	m.groupEnded, err = mt.Int64ObservableUpDownCounter("groupconc.group.task.ended", metric.WithUnit("{task}"),
		metric.WithDescription("Tasks of the groups read that ended, by status, each since its group was made. Not monotonic: a group's counts leave it when the group is forgotten or evicted, or idle under ActiveGroupsOnly."))
	check(err)
	m.inFlight, err = mt.Int64ObservableUpDownCounter("groupconc.global.inflight.usage", metric.WithUnit("{permit}"),
		metric.WithDescription("Permits of the global in-flight cap held: a task of cost c holds c."))
	check(err)
	m.inFlightLimit, err = mt.Int64ObservableUpDownCounter("groupconc.global.inflight.limit", metric.WithUnit("{permit}"),
		metric.WithDescription("The global in-flight limit; not reported when unlimited."))
	check(err)
	m.submitted, err = mt.Int64ObservableCounter("groupconc.task.submitted", metric.WithUnit("{task}"),
		metric.WithDescription("Tasks Submit accepted."))
	check(err)
	m.completed, err = mt.Int64ObservableCounter("groupconc.task.completed", metric.WithUnit("{task}"),
		metric.WithDescription("Tasks that ended, by the status their handle reports."))
	check(err)
	m.wait, err = mt.Float64Histogram("groupconc.task.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("How long tasks that ran waited for their permits, from Submit to start."),
		metric.WithExplicitBucketBoundaries(buckets...))
	check(err)
	m.run, err = mt.Float64Histogram("groupconc.task.run.duration", metric.WithUnit("s"),
		metric.WithDescription("How long task functions ran."),
		metric.WithExplicitBucketBoundaries(buckets...))
	check(err)
	m.rejected, err = mt.Int64Counter("groupconc.task.rejected", metric.WithUnit("{task}"),
		metric.WithDescription("Tasks a queue threshold turned away, by reason, whatever the rejection policy then did with them."))
	check(err)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	m.labels = grouplabel.New(o.GroupClass, o.GroupAllowlist, o.MaxGroupValues, m.newSeries)
	return m, nil
}

func (o Options) validate() error {
	var errs []error
	if o.MaxGroupValues < 0 {
		errs = append(errs, fmt.Errorf("otelgc: MaxGroupValues %d is negative", o.MaxGroupValues))
	}
	if o.Buckets != nil && len(o.Buckets) == 0 {
		errs = append(errs, errors.New("otelgc: Buckets is empty"))
	}
	for i, b := range o.Buckets {
		if math.IsNaN(b) || math.IsInf(b, 0) {
			errs = append(errs, fmt.Errorf("otelgc: Buckets[%d] is %v", i, b))
			break
		}
		if i > 0 && b <= o.Buckets[i-1] {
			errs = append(errs, fmt.Errorf("otelgc: Buckets are not strictly increasing at index %d", i))
			break
		}
	}
	// A label value must be valid UTF-8, or every export fails.
	if !utf8.ValidString(o.ExecutorName) {
		errs = append(errs, fmt.Errorf("%s: ExecutorName %q is not valid UTF-8", "otelgc", o.ExecutorName))
	}
	return errors.Join(errs...)
}

// attrs returns the attribute set of the base attributes, the group
// attribute if value is not "", and kvs.
func (m *Metrics) attrs(value string, kvs ...attribute.KeyValue) attribute.Set {
	all := append(append([]attribute.KeyValue(nil), m.base...), kvs...)
	if value != "" {
		all = append(all, AttrGroup.String(value))
	}
	return attribute.NewSet(all...)
}

// newSeries builds the listener's measurement options for one group
// attribute value ("" when the attribute is off).
func (m *Metrics) newSeries(value string) *series {
	s := &series{value: value, record: []metric.RecordOption{metric.WithAttributeSet(m.attrs(value))}}
	for i, reason := range reasons {
		s.rejected[i] = m.rejectedOptions(reason, value)
	}
	return s
}

func (m *Metrics) rejectedOptions(reason, value string) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(m.attrs(value, AttrRejectionReason.String(reason)))}
}

// Listener returns the listener that records the wait and run duration
// histograms and the rejection counter. Install it through the executor's
// policy (PolicyBuilder.TaskLifecycleListener, with groupconc.Listeners to
// keep one of your own). Each call returns an equivalent listener.
func (m *Metrics) Listener() groupconc.TaskLifecycleListener { return listener{m} }
