package promgc

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"unicode/utf8"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc/internal/grouplabel"
	"github.com/prometheus/client_golang/prometheus"
)

// DefaultBuckets are the upper bounds, in seconds, of the wait and run
// histograms when Options.Buckets is nil: 100µs to 60s, three per decade.
var DefaultBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// Options configures a Metrics. The zero value exports every metric without
// a group label, with DefaultBuckets.
type Options struct {
	// ExecutorName, if not empty, is the value of an "executor" label on
	// every metric, to tell several executors apart in one registry.
	// It must be valid UTF-8.
	ExecutorName string
	// GroupClass, if set, turns the group label on and maps each group key
	// to its value (a tier, a region): groups of one class share series. An
	// empty class, one not valid UTF-8, or a panic, means Other. A key of
	// the allowlist that is not valid UTF-8 is Other too. It is called for
	// every task the listener sees and every group at each scrape, so it
	// must be cheap and safe for concurrent use.
	GroupClass func(groupKey string) string
	// GroupAllowlist, if not empty, turns the group label on and lists the
	// values kept (keys, or classes when GroupClass is set). Every other
	// group is labelled Other.
	GroupAllowlist []string
	// MaxGroupValues caps the distinct group label values, Other not
	// counted. The first values seen keep their series, and every later
	// one is labelled Other. 0 means DefaultMaxGroupValues.
	MaxGroupValues int
	// ActiveGroupsOnly has each scrape read only the groups with something
	// going on (ActiveGroupStats), not every group remembered
	// (AllGroupStats). A scrape then costs what is active, however many
	// keys the executor remembers. Use it with unbounded keys. The gauges
	// of tasks, waits and blocked callers are the same either way. The
	// concurrency limits, the ended tasks and, with a group label, the
	// groups count the active groups only.
	ActiveGroupsOnly bool
	// Buckets are the upper bounds of the wait and run histograms, in
	// seconds, strictly increasing and finite. A last +Inf is allowed, and
	// implied. Nil means DefaultBuckets. Durations are compared with them
	// to the nanosecond.
	Buckets []float64
}

// Metrics exports one executor's metrics. Make it with New, install its
// Listener in the executor's policy if the histograms and rejection counts
// are wanted, and register its Collector for that executor. The zero value
// is not usable. A Metrics is safe for concurrent use and starts no
// goroutine.
type Metrics struct {
	labels      *grouplabel.Set[*series]
	constLabels prometheus.Labels
	groupLabel  []string // {"group"} when the group label is on, else nil
	activeOnly  bool     // Options.ActiveGroupsOnly

	// Descriptions of what the collector reads from the executor.
	tasks, globalInFlight, globalLimit, groups, concLimit, submitted, completed, oldestWait, blocked *prometheus.Desc
	paused, oldestRunning, waitingGlobal, groupEnded                                                 *prometheus.Desc

	// What the listener feeds, exported only once Listener was called.
	wait, run *prometheus.Desc
	buckets   []float64
	rejected  *prometheus.CounterVec
	listening atomic.Bool
}

// series holds the listener's metrics for one group label value, resolved
// once so that a task costs no label lookup.
type series struct {
	durations   *durations
	rejected    [len(reasons)]prometheus.Counter // by reason, in the order of reasons
	labelValues []string                         // the group label's value, if on
}

// reasons are the rejection reasons the executor sends OnRejected, each
// counted under its own label value. Any other (one a later release might
// add) is counted as Other, so the label takes at most five values.
var reasons = [...]string{
	groupconc.ReasonGlobalQueueFull,
	groupconc.ReasonGroupQueueFull,
	groupconc.ReasonWaitTimeout,
	groupconc.ReasonDisplaced,
}

// New returns a Metrics configured by o, or an error naming each invalid
// option.
func New(o Options) (*Metrics, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	m := &Metrics{activeOnly: o.ActiveGroupsOnly}
	if o.ExecutorName != "" {
		m.constLabels = prometheus.Labels{"executor": o.ExecutorName}
	}
	if o.GroupClass != nil || len(o.GroupAllowlist) > 0 {
		m.groupLabel = []string{"group"}
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append(labels, m.groupLabel...), m.constLabels)
	}
	m.tasks = desc("groupconc_tasks", "Tasks accepted and not finished, by state: running (holding their group's concurrency permit) or waiting.", "state")
	m.groups = desc("groupconc_groups", "Groups the executor knows: used and not evicted.")
	m.concLimit = desc("groupconc_concurrency_limit", "The groups' concurrency limits in force (adaptive ones as they stand), summed; groups with no limit are left out.")
	m.oldestWait = desc("groupconc_oldest_wait_seconds", "How long the oldest waiting task has waited since Submit; 0 if none waits.")
	m.blocked = desc("groupconc_blocked_callers", "Callers of SubmitWith with Block waiting for a queue slot: producers held back, not tasks yet.")
	m.paused = desc("groupconc_paused_groups", "Groups paused: none of their tasks starts. For a group label value of one key, 0 or 1.")
	m.oldestRunning = desc("groupconc_oldest_running_seconds", "How long the longest-running task has run; 0 if none runs. A task hung in its function shows here.")
	m.waitingGlobal = desc("groupconc_tasks_waiting_global", "Of the waiting tasks, those waiting for a global in-flight permit: held back by the global cap, not by their group's limits.")
	m.groupEnded = desc("groupconc_group_tasks_ended", "Tasks of the groups read that ended, by status, each since its group was made. A gauge: a group's counts leave it when the group is forgotten or evicted, or idle under ActiveGroupsOnly.", "status")
	m.globalInFlight = prometheus.NewDesc("groupconc_global_inflight", "Permits of the global in-flight cap held: a task of cost c holds c.", nil, m.constLabels)
	m.globalLimit = prometheus.NewDesc("groupconc_global_inflight_limit", "The global in-flight limit; absent when unlimited.", nil, m.constLabels)
	m.submitted = prometheus.NewDesc("groupconc_tasks_submitted_total", "Tasks Submit accepted.", nil, m.constLabels)
	m.completed = prometheus.NewDesc("groupconc_tasks_completed_total", "Tasks that ended, by the status their handle reports.", []string{"status"}, m.constLabels)

	m.buckets = o.Buckets
	if m.buckets == nil {
		m.buckets = DefaultBuckets
	}
	m.buckets = slices.Clone(m.buckets)
	if len(m.buckets) > 0 && math.IsInf(m.buckets[len(m.buckets)-1], 1) {
		m.buckets = m.buckets[:len(m.buckets)-1] // +Inf is always there
	}
	m.wait = desc("groupconc_task_wait_seconds", "How long tasks that ran waited for their permits, from Submit to start.")
	m.run = desc("groupconc_task_run_seconds", "How long task functions ran.")
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "groupconc_tasks_rejected_total",
		Help:        "Tasks a queue threshold turned away, by reason, whatever the rejection policy then did with them.",
		ConstLabels: m.constLabels,
	}, append([]string{"reason"}, m.groupLabel...))
	m.labels = grouplabel.New(o.GroupClass, o.GroupAllowlist, o.MaxGroupValues, m.newSeries)
	return m, nil
}

func (o Options) validate() error {
	var errs []error
	if o.MaxGroupValues < 0 {
		errs = append(errs, fmt.Errorf("promgc: MaxGroupValues %d is negative", o.MaxGroupValues))
	}
	if o.Buckets != nil && len(o.Buckets) == 0 {
		errs = append(errs, errors.New("promgc: Buckets is empty"))
	}
	for i, b := range o.Buckets {
		if math.IsNaN(b) || math.IsInf(b, 0) && (i < len(o.Buckets)-1 || b < 0) {
			errs = append(errs, fmt.Errorf("promgc: Buckets[%d] is %v", i, b))
			break
		}
		if i > 0 && b <= o.Buckets[i-1] {
			errs = append(errs, fmt.Errorf("promgc: Buckets are not strictly increasing at index %d", i))
			break
		}
	}
	// A label value must be valid UTF-8, or every export fails.
	if !utf8.ValidString(o.ExecutorName) {
		errs = append(errs, fmt.Errorf("%s: ExecutorName %q is not valid UTF-8", "promgc", o.ExecutorName))
	}
	return errors.Join(errs...)
}

// newSeries makes the listener's metrics for one group label value ("" when
// the group label is off).
func (m *Metrics) newSeries(value string) *series {
	var lv []string
	if m.groupLabel != nil {
		lv = []string{value}
	}
	s := &series{durations: newDurations(m.buckets), labelValues: lv}
	for i, reason := range reasons {
		s.rejected[i] = m.rejectedCounter(reason, lv)
	}
	return s
}

// rejectedCounter returns the rejection counter of reason and the group
// label values lv.
func (m *Metrics) rejectedCounter(reason string, lv []string) prometheus.Counter {
	return m.rejected.WithLabelValues(append([]string{reason}, lv...)...)
}

// Listener returns the listener that feeds the wait and run histograms and
// the rejection counter. Install it through the executor's policy
// (PolicyBuilder.TaskLifecycleListener, with groupconc.Listeners to keep
// one of your own). Those metrics are exported once Listener has been
// called. Each call returns an equivalent listener.
func (m *Metrics) Listener() groupconc.TaskLifecycleListener {
	m.listening.Store(true)
	return listener{m}
}

// Collector returns a prometheus.Collector of e's metrics, to register once.
// It panics if e is nil.
func (m *Metrics) Collector(e *groupconc.GroupExecutor) *Collector {
	if e == nil {
		panic("promgc: Collector of a nil executor")
	}
	return &Collector{m: m, e: e}
}
