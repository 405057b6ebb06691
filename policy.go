package groupconc

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kobe/groupconc/internal/groupstate"
)

// Unlimited is the limit that means "no limit". A layer whose limit is
// Unlimited only counts its tasks.
const Unlimited = math.MaxInt

// IsolationMode decides how groups share the global in-flight cap.
type IsolationMode int

const (
	// IsolationOff takes the global permit first, then the group's bulkhead
	// and concurrency permits. It is the default. A task waiting for its
	// group holds a global permit, so one group's backlog can hold them all
	// (see GroupPolicy.GlobalMaxInFlight).
	IsolationOff IsolationMode = iota
	// IsolationFairShare takes the group's permits first and the global one
	// last, held only while the task runs. Each freed global permit goes to
	// the waiting group whose running tasks hold the fewest global permits
	// per weight (a task of cost c holds c). So a light group never waits
	// behind a heavy group's burst.
	IsolationFairShare
)

// String returns "off" or "fair-share".
func (m IsolationMode) String() string {
	switch m {
	case IsolationOff:
		return "off"
	case IsolationFairShare:
		return "fair-share"
	}
	return fmt.Sprintf("IsolationMode(%d)", int(m))
}

// ErrInvalidPolicy is wrapped by the error Build returns for a bad setting.
var ErrInvalidPolicy = errors.New("groupconc: invalid policy")

// GroupPolicy is an immutable set of limits and hooks for a GroupExecutor.
// Build one with NewPolicyBuilder, or use DefaultPolicy.
//
// A GroupPolicy is safe for concurrent use. Its zero value, and a nil
// *GroupPolicy, behave as DefaultPolicy.
type GroupPolicy struct {
	built bool // false for the zero value, which stands for DefaultPolicy

	concurrency      map[string]int
	resolver         func(groupKey string) int
	defaultConc      int
	globalInFlight   int
	defaultInFlight  int
	inFlight         map[string]int
	globalQueue      int
	defaultQueue     int
	queue            map[string]int
	rejection        RejectionPolicy
	rejectionHandler RejectionHandler
	listener         TaskLifecycleListener
	isolation        IsolationMode
	weights          map[string]int
	weightResolver   func(groupKey string) int
	defaultWeight    int
	idleTTL          time.Duration
	pressure         PressureConfig
	pressureFn       func(PressureWarning)
	set              defaultBits     // the Default…PerGroup settings made, as opposed to the library's
	adaptive         *AdaptiveConfig // never changed once built
	adaptiveGlobal   *AdaptiveConfig // never changed once built
	limitChanges     func(LimitChange)
	parentResolver   func(groupKey string) string
	parentSeparator  string // "" for none: Build refuses an empty one
}

// defaultBits records which Default…PerGroup settings a policy was given, so
// that Explain and MarshalJSON tell a default set to 1 from the library's 1.
type defaultBits uint8

const (
	setConc defaultBits = 1 << iota
	setInFlight
	setQueue
	setWeight
)

// defaultPolicy is New's policy for a nil one. Its limits are also those
// Build gives what a builder leaves unset.
var defaultPolicy = &GroupPolicy{
	built:           true,
	defaultConc:     1,
	globalInFlight:  Unlimited,
	defaultInFlight: Unlimited,
	globalQueue:     Unlimited,
	defaultQueue:    Unlimited,
	rejection:       RejectAbort,
	defaultWeight:   1,
}

// DefaultPolicy returns the policy New uses for a nil policy. It has
// concurrency 1 per group, no in-flight caps, no queue thresholds,
// RejectAbort, no handler and no listener.
func DefaultPolicy() *GroupPolicy { return defaultPolicy }

func (p *GroupPolicy) orDefault() *GroupPolicy {
	if p == nil || !p.built {
		return defaultPolicy
	}
	return p
}

// ResolveConcurrency returns the concurrency limit of groupKey. That is the
// value in PerGroupMaxConcurrency if the key is there, else the
// ConcurrencyResolver's answer, else DefaultMaxConcurrencyPerGroup. A
// resolver that panics yields the default. A resolver value below 1 becomes
// 1. The result is >= 1.
func (p *GroupPolicy) ResolveConcurrency(groupKey string) int {
	p = p.orDefault()
	n, _ := resolve(p.concurrency, p.resolver, p.defaultConc, groupKey)
	return n
}

// ResolveMaxInFlight returns the bulkhead limit of groupKey. That is the
// value in PerGroupMaxInFlight if the key is there, else
// DefaultMaxInFlightPerGroup. The result is >= 1, and Unlimited means no
// bulkhead.
func (p *GroupPolicy) ResolveMaxInFlight(groupKey string) int {
	p = p.orDefault()
	if n, ok := p.inFlight[groupKey]; ok {
		return n
	}
	return p.defaultInFlight
}

// ResolveQueueThreshold returns how many tasks of groupKey may wait for the
// bulkhead or concurrency permit. That is the value in
// PerGroupQueueThreshold if the key is there, else
// DefaultQueueThresholdPerGroup. The result is >= 0. Zero means a task that
// cannot start at once is rejected. Unlimited means waiting is not bounded.
func (p *GroupPolicy) ResolveQueueThreshold(groupKey string) int {
	p = p.orDefault()
	if n, ok := p.queue[groupKey]; ok {
		return n
	}
	return p.defaultQueue
}

// GlobalMaxInFlight returns the cap on tasks holding a global permit, across
// all groups. Unlimited means no cap.
//
// Under IsolationOff the global permit is taken first. So a task waiting for
// its group's bulkhead or concurrency permit already holds one. One group
// with many queued tasks can then hold every global permit. Other groups'
// tasks wait although their groups are idle. A group's queue threshold
// bounds this, since the group holds at most min(concurrency, bulkhead) +
// threshold global permits. IsolationFairShare removes it. There only
// running tasks hold global permits, shared fairly among the groups.
func (p *GroupPolicy) GlobalMaxInFlight() int { return p.orDefault().globalInFlight }

// GlobalQueueThreshold returns how many tasks may wait for a global permit.
// Unlimited means waiting is not bounded.
func (p *GroupPolicy) GlobalQueueThreshold() int { return p.orDefault().globalQueue }

// Isolation returns the isolation mode.
func (p *GroupPolicy) Isolation() IsolationMode { return p.orDefault().isolation }

// ResolveWeight returns the fair-share weight of groupKey. That is the value
// in PerGroupWeight if the key is there, else the WeightResolver's answer,
// else DefaultWeightPerGroup (1 unless set). A resolver that panics yields
// the default. A resolver value below 1 becomes 1. The result is >= 1.
func (p *GroupPolicy) ResolveWeight(groupKey string) int {
	p = p.orDefault()
	n, _ := resolve(p.weights, p.weightResolver, p.defaultWeight, groupKey)
	return n
}

// IdleGroupTTL returns how long a group with no task waiting or running is
// remembered. Zero means forever.
func (p *GroupPolicy) IdleGroupTTL() time.Duration { return p.orDefault().idleTTL }

// limits resolves every limit of groupKey, keeping the resolvers' answers
// for ExplainGroup. p must not be nil.
func (p *GroupPolicy) limits(groupKey string) groupstate.Limits {
	conc, concAnswer := resolve(p.concurrency, p.resolver, p.defaultConc, groupKey)
	weight, weightAnswer := resolve(p.weights, p.weightResolver, p.defaultWeight, groupKey)
	return groupstate.Limits{
		Concurrency:    conc,
		MaxInFlight:    p.ResolveMaxInFlight(groupKey),
		QueueThreshold: p.ResolveQueueThreshold(groupKey),
		Weight:         weight,
		Answers:        groupstate.Answers{Concurrency: concAnswer, Weight: weightAnswer},
	}
}

// resolve resolves a limit that a resolver may give. That is m's value for
// groupKey, else f's answer (>= 1), else def. The returned answer is f's
// answer, or 0 when f was not asked or panicked.
func resolve(m map[string]int, f func(string) int, def int, groupKey string) (n, answer int) {
	if n, ok := m[groupKey]; ok {
		return n, 0
	}
	if f != nil {
		if n, ok := callResolver(f, groupKey); ok {
			return max(n, 1), max(n, 1)
		}
	}
	return def, 0
}

// displaces reports whether a task that finds its queue full makes room
// (RejectDiscardOldest, with no handler to replace it).
func (p *GroupPolicy) displaces() bool {
	return p.rejection == RejectDiscardOldest && p.rejectionHandler == nil
}

// ResolveParent returns groupKey's parent under p, "" for none. A
// ParentResolver, when set, alone decides. Else, with a ParentSeparator, the
// parent is the part of groupKey before its last separator, if that part is
// not empty. A resolver that panics yields "". Submit to that group returns
// an error naming the panic. A nil policy, or one without parents, returns
// "".
func (p *GroupPolicy) ResolveParent(groupKey string) string {
	parent, _ := p.orDefault().parent(groupKey)
	return parent
}
