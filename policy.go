package groupconc

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/kobe/groupconc/internal/groupstate"
)

// Unlimited is the limit that means "no limit". A layer whose limit is
// Unlimited has no semaphore and costs nothing on the hot path.
const Unlimited = math.MaxInt

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
}

var defaultPolicy = &GroupPolicy{
	built:           true,
	defaultConc:     1,
	globalInFlight:  Unlimited,
	defaultInFlight: Unlimited,
	globalQueue:     Unlimited,
	defaultQueue:    Unlimited,
	rejection:       RejectAbort,
}

// DefaultPolicy returns the policy New uses for a nil policy: concurrency 1
// per group, no in-flight caps, no queue thresholds, RejectAbort, no handler
// and no listener.
func DefaultPolicy() *GroupPolicy { return defaultPolicy }

func (p *GroupPolicy) orDefault() *GroupPolicy {
	if p == nil || !p.built {
		return defaultPolicy
	}
	return p
}

// ResolveConcurrency returns the concurrency limit of groupKey: the value in
// PerGroupMaxConcurrency if the key is there, else the ConcurrencyResolver's
// answer, else DefaultMaxConcurrencyPerGroup. A resolver that panics yields
// the default; a resolver value below 1 becomes 1. The result is >= 1.
func (p *GroupPolicy) ResolveConcurrency(groupKey string) int {
	p = p.orDefault()
	if n, ok := p.concurrency[groupKey]; ok {
		return n
	}
	if p.resolver != nil {
		if n, ok := callResolver(p.resolver, groupKey); ok {
			return max(n, 1)
		}
	}
	return p.defaultConc
}

// callResolver reports the resolver's value, or false if it panicked.
func callResolver(f func(string) int, groupKey string) (n int, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return f(groupKey), true
}

// ResolveMaxInFlight returns the bulkhead limit of groupKey: the value in
// PerGroupMaxInFlight if the key is there, else DefaultMaxInFlightPerGroup.
// The result is >= 1; Unlimited means no bulkhead.
func (p *GroupPolicy) ResolveMaxInFlight(groupKey string) int {
	p = p.orDefault()
	if n, ok := p.inFlight[groupKey]; ok {
		return n
	}
	return p.defaultInFlight
}

// ResolveQueueThreshold returns how many tasks of groupKey may wait for the
// bulkhead or concurrency permit: the value in PerGroupQueueThreshold if the
// key is there, else DefaultQueueThresholdPerGroup. The result is >= 0;
// 0 means a task that cannot start at once is rejected, and Unlimited means
// waiting is not bounded.
func (p *GroupPolicy) ResolveQueueThreshold(groupKey string) int {
	p = p.orDefault()
	if n, ok := p.queue[groupKey]; ok {
		return n
	}
	return p.defaultQueue
}

// GlobalMaxInFlight returns the cap on tasks holding a global permit, across
// all groups: tasks waiting for their group's permits count as well as
// running ones. Unlimited means no cap.
//
// Because the global permit is taken first, a task waiting for its group's
// bulkhead or concurrency permit already holds a global one. So one group
// with many queued tasks can hold every global permit, and tasks of other
// groups then wait although their groups are idle. A group's per-group queue
// threshold bounds this: it holds at most min(concurrency, bulkhead) +
// threshold global permits. Set DefaultQueueThresholdPerGroup so that this
// sum stays below the global cap when isolation between groups matters.
func (p *GroupPolicy) GlobalMaxInFlight() int { return p.orDefault().globalInFlight }

// GlobalQueueThreshold returns how many tasks may wait for a global permit;
// Unlimited means waiting is not bounded.
func (p *GroupPolicy) GlobalQueueThreshold() int { return p.orDefault().globalQueue }

func (p *GroupPolicy) limits(groupKey string) groupstate.Limits {
	return groupstate.Limits{
		Concurrency:    p.ResolveConcurrency(groupKey),
		MaxInFlight:    p.ResolveMaxInFlight(groupKey),
		QueueThreshold: p.ResolveQueueThreshold(groupKey),
	}
}

// PolicyBuilder collects the settings of a GroupPolicy. Every setter returns
// the builder so calls chain; Build validates and returns the policy.
//
// Setters copy the maps they are given, so later changes to a map do not
// reach the builder or any policy it built. A builder may be reused after
// Build. Its zero value is ready to use and equal to NewPolicyBuilder(). It
// is not safe for concurrent use.
type PolicyBuilder struct {
	concurrency      map[string]int
	resolver         func(groupKey string) int
	defaultConc      *int
	globalInFlight   *int
	defaultInFlight  *int
	inFlight         map[string]int
	globalQueue      *int
	defaultQueue     *int
	queue            map[string]int
	rejection        RejectionPolicy
	rejectionHandler RejectionHandler
	listener         TaskLifecycleListener
}

// NewPolicyBuilder returns a builder holding the DefaultPolicy settings.
func NewPolicyBuilder() *PolicyBuilder { return &PolicyBuilder{} }

// PerGroupMaxConcurrency sets the concurrency limit of the listed groups;
// they win over the resolver and the default. Each value must be >= 1.
func (b *PolicyBuilder) PerGroupMaxConcurrency(m map[string]int) *PolicyBuilder {
	b.concurrency = maps.Clone(m)
	return b
}

// ConcurrencyResolver sets a function that gives the concurrency limit of a
// group not listed in PerGroupMaxConcurrency. It is called once per group,
// when the group is first used (and again after EvictGroup), possibly from
// several goroutines at once. A panic in it yields the default; a value
// below 1 becomes 1.
func (b *PolicyBuilder) ConcurrencyResolver(f func(groupKey string) int) *PolicyBuilder {
	b.resolver = f
	return b
}

// DefaultMaxConcurrencyPerGroup sets the concurrency limit of groups that
// neither the map nor the resolver covers. It must be >= 1; the default is 1.
func (b *PolicyBuilder) DefaultMaxConcurrencyPerGroup(n int) *PolicyBuilder {
	b.defaultConc = &n
	return b
}

// GlobalMaxInFlight caps the tasks holding a global permit, all groups
// together; see GroupPolicy.GlobalMaxInFlight for how waiting tasks count.
// It must be >= 1; the default is Unlimited.
func (b *PolicyBuilder) GlobalMaxInFlight(n int) *PolicyBuilder {
	b.globalInFlight = &n
	return b
}

// DefaultMaxInFlightPerGroup sets the bulkhead of groups not listed in
// PerGroupMaxInFlight: the tasks of one group waiting for a concurrency permit
// or running. It must be >= 1; the default is Unlimited.
func (b *PolicyBuilder) DefaultMaxInFlightPerGroup(n int) *PolicyBuilder {
	b.defaultInFlight = &n
	return b
}

// PerGroupMaxInFlight sets the bulkhead of the listed groups. Each value
// must be >= 1.
func (b *PolicyBuilder) PerGroupMaxInFlight(m map[string]int) *PolicyBuilder {
	b.inFlight = maps.Clone(m)
	return b
}

// GlobalQueueThreshold bounds how many tasks may wait for a global permit. It
// must be >= 0; 0 means a task that cannot take a global permit at once is
// rejected. The default is Unlimited.
func (b *PolicyBuilder) GlobalQueueThreshold(n int) *PolicyBuilder {
	b.globalQueue = &n
	return b
}

// DefaultQueueThresholdPerGroup bounds, for groups not listed in
// PerGroupQueueThreshold, how many tasks of one group may wait for the
// bulkhead or concurrency permit. It must be >= 0; the default is Unlimited.
func (b *PolicyBuilder) DefaultQueueThresholdPerGroup(n int) *PolicyBuilder {
	b.defaultQueue = &n
	return b
}

// PerGroupQueueThreshold sets the queue threshold of the listed groups. Each
// value must be >= 0.
func (b *PolicyBuilder) PerGroupQueueThreshold(m map[string]int) *PolicyBuilder {
	b.queue = maps.Clone(m)
	return b
}

// RejectionPolicy sets what happens to a task turned away by a queue
// threshold when no RejectionHandler is set. The default is RejectAbort.
func (b *PolicyBuilder) RejectionPolicy(p RejectionPolicy) *PolicyBuilder {
	b.rejection = p
	return b
}

// RejectionHandler sets a function that decides the outcome of every rejected
// task; when set it replaces the RejectionPolicy.
func (b *PolicyBuilder) RejectionHandler(h RejectionHandler) *PolicyBuilder {
	b.rejectionHandler = h
	return b
}

// TaskLifecycleListener sets the listener told of every task's events.
func (b *PolicyBuilder) TaskLifecycleListener(l TaskLifecycleListener) *PolicyBuilder {
	b.listener = l
	return b
}

// Build validates the settings and returns the policy. On a bad setting it
// returns nil and one error, wrapping ErrInvalidPolicy, that names every bad
// field and its value.
func (b *PolicyBuilder) Build() (*GroupPolicy, error) {
	var bad []string
	check := func(field string, n, least int) {
		if n < least {
			bad = append(bad, fmt.Sprintf("%s is %d, want >= %d", field, n, least))
		}
	}
	checkMap := func(field string, m map[string]int, least int) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k == "" {
				bad = append(bad, fmt.Sprintf("%s has an empty group key", field))
			}
			check(fmt.Sprintf("%s[%q]", field, k), m[k], least)
		}
	}
	p := &GroupPolicy{
		built:            true,
		concurrency:      maps.Clone(b.concurrency),
		resolver:         b.resolver,
		defaultConc:      or(b.defaultConc, 1),
		globalInFlight:   or(b.globalInFlight, Unlimited),
		defaultInFlight:  or(b.defaultInFlight, Unlimited),
		inFlight:         maps.Clone(b.inFlight),
		globalQueue:      or(b.globalQueue, Unlimited),
		defaultQueue:     or(b.defaultQueue, Unlimited),
		queue:            maps.Clone(b.queue),
		rejection:        b.rejection,
		rejectionHandler: b.rejectionHandler,
		listener:         b.listener,
	}
	checkMap("PerGroupMaxConcurrency", p.concurrency, 1)
	check("DefaultMaxConcurrencyPerGroup", p.defaultConc, 1)
	check("GlobalMaxInFlight", p.globalInFlight, 1)
	check("DefaultMaxInFlightPerGroup", p.defaultInFlight, 1)
	checkMap("PerGroupMaxInFlight", p.inFlight, 1)
	check("GlobalQueueThreshold", p.globalQueue, 0)
	check("DefaultQueueThresholdPerGroup", p.defaultQueue, 0)
	checkMap("PerGroupQueueThreshold", p.queue, 0)
	if p.rejection < RejectAbort || p.rejection > RejectCallerRuns {
		bad = append(bad, fmt.Sprintf("RejectionPolicy is %d, want RejectAbort, RejectDiscard or RejectCallerRuns", int(p.rejection)))
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidPolicy, strings.Join(bad, "; "))
	}
	return p, nil
}

func or(v *int, def int) int {
	if v == nil {
		return def
	}
	return *v
}
