package groupconc

import (
	"fmt"
	"maps"
	"strings"
	"time"
)

// PolicyBuilder collects the settings of a GroupPolicy. Every setter returns
// the builder so calls chain. Build validates and returns the policy.
//
// Setters copy the maps they are given, so later changes to a map do not
// reach the builder or any policy it built. A builder may be reused after
// Build. Its zero value is ready to use and equal to NewPolicyBuilder(). It
// is not safe for concurrent use.
//
// A nil *PolicyBuilder, such as ParsePolicy returns with an error, holds no
// settings. Its setters do nothing and return nil, so a chain of them ends
// at Build, which returns an error wrapping ErrInvalidPolicy. A nil builder
// never builds DefaultPolicy in silence, since the settings meant for it
// are lost.
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
	isolation        IsolationMode
	weights          map[string]int
	weightResolver   func(groupKey string) int
	defaultWeight    *int
	idleTTL          time.Duration
	pressure         PressureConfig
	pressureFn       func(PressureWarning)
	adaptive         *AdaptiveConfig // AdaptiveConcurrency
	adaptiveGlobal   *AdaptiveConfig // AdaptiveGlobal
	limitChanges     func(LimitChange)
	parentResolver   func(groupKey string) string
	parentSeparator  *string
}

// errNilBuilder is what Build returns on a nil builder.
var errNilBuilder = fmt.Errorf("%w: nil PolicyBuilder: make one with NewPolicyBuilder, or check ParsePolicy's error", ErrInvalidPolicy)

// NewPolicyBuilder returns a builder holding the DefaultPolicy settings.
func NewPolicyBuilder() *PolicyBuilder { return &PolicyBuilder{} }

// PerGroupMaxConcurrency sets the concurrency limit of the listed groups.
// They win over the resolver and the default. Each value must be >= 1.
func (b *PolicyBuilder) PerGroupMaxConcurrency(m map[string]int) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.concurrency = maps.Clone(m)
	return b
}

// ConcurrencyResolver sets a function that gives the concurrency limit of a
// group not listed in PerGroupMaxConcurrency. It is called once per group,
// when the group is first used and again after EvictGroup. It may be called
// from several goroutines at once. A panic in it yields the default, and a
// value below 1 becomes 1. It runs inside the Submit call that first uses
// the group. So a slow resolver makes that Submit slow, and it should be
// quick. UpdatePolicy and SetGroupOverride call it again for live groups,
// under the executor's update lock. So it must not call back into the
// executor.
func (b *PolicyBuilder) ConcurrencyResolver(f func(groupKey string) int) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.resolver = f
	return b
}

// DefaultMaxConcurrencyPerGroup sets the concurrency limit of groups that
// neither the map nor the resolver covers. It must be >= 1. The default is
// 1.
func (b *PolicyBuilder) DefaultMaxConcurrencyPerGroup(n int) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.defaultConc = &n
	return b
}

// GlobalMaxInFlight caps the tasks holding a global permit, all groups
// together. See GroupPolicy.GlobalMaxInFlight for how waiting tasks count.
// It must be >= 1. The default is Unlimited.
func (b *PolicyBuilder) GlobalMaxInFlight(n int) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.globalInFlight = &n
	return b
}

// DefaultMaxInFlightPerGroup sets the bulkhead of groups not listed in
// PerGroupMaxInFlight. The bulkhead bounds the tasks of one group waiting
// for a concurrency permit or running. It must be >= 1. The default is
// Unlimited.
func (b *PolicyBuilder) DefaultMaxInFlightPerGroup(n int) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.defaultInFlight = &n
	return b
}

// PerGroupMaxInFlight sets the bulkhead of the listed groups. Each value
// must be >= 1.
func (b *PolicyBuilder) PerGroupMaxInFlight(m map[string]int) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.inFlight = maps.Clone(m)
	return b
}

// GlobalQueueThreshold bounds how many tasks may wait for a global permit.
// It must be >= 0. Zero means a task that cannot take a global permit at
// once is rejected. The default is Unlimited. Under IsolationOff a task
// waits here before it reaches its group, so only this threshold counts it
// there. Under IsolationFairShare Build refuses any value but Unlimited.
func (b *PolicyBuilder) GlobalQueueThreshold(n int) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.globalQueue = &n
	return b
}

// DefaultQueueThresholdPerGroup bounds how many tasks of one group may wait
// for the bulkhead or concurrency permit. It applies to groups not listed in
// PerGroupQueueThreshold. It must be >= 0. The default is Unlimited.
//
// Where it counts depends on the isolation mode. Under IsolationOff, the
// default, a task waits for a global permit first. A task waiting there is
// not counted here. So with a GlobalMaxInFlight, a group's backlog can grow
// past this threshold in the global line. Bound it with
// GlobalQueueThreshold. Under IsolationFairShare it counts the group's
// waiting tasks at every layer, so it bounds each group's backlog.
//
// With parents (ParentSeparator), a task that waits for an ancestor's
// limit takes a slot of that ancestor's queue, and of its own group's
// only if it waited for its own limit first. So a child's threshold,
// even 0, does not turn away a task that its parent's limit holds back:
// the parent's threshold bounds those.
func (b *PolicyBuilder) DefaultQueueThresholdPerGroup(n int) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.defaultQueue = &n
	return b
}

// PerGroupQueueThreshold sets the queue threshold of the listed groups. Each
// value must be >= 0. It counts where DefaultQueueThresholdPerGroup says.
func (b *PolicyBuilder) PerGroupQueueThreshold(m map[string]int) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.queue = maps.Clone(m)
	return b
}

// RejectionPolicy sets what happens to a task turned away by a queue
// threshold when no RejectionHandler is set. The default is RejectAbort.
func (b *PolicyBuilder) RejectionPolicy(p RejectionPolicy) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.rejection = p
	return b
}

// RejectionHandler sets a function that decides the outcome of every
// rejected task. When set, it replaces the RejectionPolicy.
func (b *PolicyBuilder) RejectionHandler(h RejectionHandler) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.rejectionHandler = h
	return b
}

// TaskLifecycleListener sets the listener told of every task's events.
func (b *PolicyBuilder) TaskLifecycleListener(l TaskLifecycleListener) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.listener = l
	return b
}

// Isolation sets how groups share the global in-flight cap. The default is
// IsolationOff. An executor keeps its mode for life, so UpdatePolicy refuses
// a policy of another mode.
func (b *PolicyBuilder) Isolation(m IsolationMode) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.isolation = m
	return b
}

// PerGroupWeight sets the fair-share weight of the listed groups. They win
// over the resolver and the default. Each value must be >= 1. Weights need
// IsolationFairShare. Under IsolationOff, Build refuses any map, even an
// empty one. A nil map sets none. Weights share the global cap and a
// parent's limits: with neither they change nothing.
func (b *PolicyBuilder) PerGroupWeight(m map[string]int) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.weights = maps.Clone(m)
	return b
}

// WeightResolver sets a function that gives the weight of a group not listed
// in PerGroupWeight. It is called as ConcurrencyResolver is, and must not
// call back into the executor either.
// A panic in it yields the default, and a value below 1 becomes 1.
func (b *PolicyBuilder) WeightResolver(f func(groupKey string) int) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.weightResolver = f
	return b
}

// DefaultWeightPerGroup sets the weight of groups that neither the map nor
// the resolver covers. It must be >= 1. The default is 1.
func (b *PolicyBuilder) DefaultWeightPerGroup(n int) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.defaultWeight = &n
	return b
}

// IdleGroupTTL has a group with no task waiting or running for d forgotten,
// as EvictGroup forgets it. It is gone from the stats, and its limits are
// resolved again on next use. A group idle for 2×d is gone by the time any
// later Submit, Stats, GroupStats, AllGroupStats, ExplainGroup or override
// call (SetGroupOverride, GroupOverride, GroupOverrides) returns. The check
// runs inside those calls, so no goroutine is kept for it. A caller blocked
// to submit to a group (SubmitOptions.Block) keeps it too. So does a pause.
// A group's idle time starts anew when a task of it ends, when it is
// resumed, and when SetGroupOverride changes it (a drop included). Reads
// (stats, ExplainGroup, GroupOverride) leave it as it is. Zero, the
// default, remembers groups until EvictGroup. It must be >= 0.
func (b *PolicyBuilder) IdleGroupTTL(d time.Duration) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.idleTTL = d
	return b
}

// ParentResolver gives each group a parent ("" for none), making groups of
// groups, such as a tenant over its users. A task then counts against its
// group's limits and every ancestor's. When ParentSeparator is set too, the
// resolver alone decides. It is called once per group, when the group is
// made, and may be called from several goroutines at once. A group with more
// than 8 ancestors, a cycle of parents, or a resolver that panics is refused
// by Submit with an error wrapping ErrInvalidPolicy. One too deep also wraps
// ErrInvalidTask, as the key is at fault. Like ConcurrencyResolver, the
// resolver must not call back into the executor.
func (b *PolicyBuilder) ParentResolver(f func(groupKey string) string) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.parentResolver = f
	return b
}

// ParentSeparator gives each group the parent its key names. That is the
// part before its last sep, when that part is not empty. So "a/b/c" has
// parent "a/b", whose parent is "a", and "/a" has none. An empty sep is a
// Build error, whether or not a ParentResolver is set.
func (b *PolicyBuilder) ParentSeparator(sep string) *PolicyBuilder {
	if b == nil {
		return nil
	}
	b.parentSeparator = &sep
	return b
}

// Build validates the settings and returns the policy. On a bad setting it
// returns nil and one error, wrapping ErrInvalidPolicy, that names every bad
// field and its value. On a nil builder it returns nil and such an error.
func (b *PolicyBuilder) Build() (*GroupPolicy, error) {
	if b == nil {
		return nil, errNilBuilder
	}
	p := &GroupPolicy{
		built:            true,
		concurrency:      maps.Clone(b.concurrency),
		resolver:         b.resolver,
		defaultConc:      or(b.defaultConc, defaultPolicy.defaultConc),
		globalInFlight:   or(b.globalInFlight, defaultPolicy.globalInFlight),
		defaultInFlight:  or(b.defaultInFlight, defaultPolicy.defaultInFlight),
		inFlight:         maps.Clone(b.inFlight),
		globalQueue:      or(b.globalQueue, defaultPolicy.globalQueue),
		defaultQueue:     or(b.defaultQueue, defaultPolicy.defaultQueue),
		queue:            maps.Clone(b.queue),
		rejection:        b.rejection,
		rejectionHandler: b.rejectionHandler,
		listener:         b.listener,
		isolation:        b.isolation,
		weights:          maps.Clone(b.weights),
		weightResolver:   b.weightResolver,
		defaultWeight:    or(b.defaultWeight, defaultPolicy.defaultWeight),
		idleTTL:          b.idleTTL,
		pressure:         b.pressure,
		pressureFn:       b.pressureFn,
		set:              bitIf(b.defaultConc != nil, setConc) | bitIf(b.defaultInFlight != nil, setInFlight) | bitIf(b.defaultQueue != nil, setQueue) | bitIf(b.defaultWeight != nil, setWeight),
		adaptive:         b.adaptive,
		adaptiveGlobal:   b.adaptiveGlobal,
		limitChanges:     b.limitChanges,
		parentResolver:   b.parentResolver,
	}
	if b.parentSeparator != nil {
		p.parentSeparator = *b.parentSeparator
	}
	weighted := b.weights != nil || b.weightResolver != nil || b.defaultWeight != nil // an empty map is a setting too
	bad := p.check(weighted)
	if b.parentSeparator != nil && *b.parentSeparator == "" {
		bad = append(bad, "ParentSeparator is empty")
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalidPolicy, strings.Join(bad, "; "))
	}
	return p, nil
}
