package groupconc

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kobe/groupconc/internal/groupstate"
)

// MaxGroupOverrides is the most group keys that may have an override at once
// in one executor. SetGroupOverride refuses a new key beyond it with
// ErrTooManyOverrides. Overrides of groups that are gone do not count.
const MaxGroupOverrides = 10_000

// ErrUnknownGroup is wrapped by the error of SetGroupOverride for a group
// the executor does not know. The group was never used, or evicted, or
// forgotten as idle.
var ErrUnknownGroup = errors.New("groupconc: unknown group")

// ErrTooManyOverrides is wrapped by the error of SetGroupOverride for a new
// key when MaxGroupOverrides keys already have an override.
var ErrTooManyOverrides = errors.New("groupconc: too many group overrides")

// GroupOverride is a per-group change of limits that an operator makes at
// run time, above the policy. A non-nil field replaces what the policy
// resolves for the group. A nil one leaves it to the policy. The values are
// checked as the policy's are. MaxConcurrency and MaxInFlight must be >= 1,
// and QueueThreshold >= 0. Weight must be >= 1 and is allowed only under
// IsolationFairShare. Unlimited is allowed for the three limits.
//
// Paused, if true, stops the group from starting tasks. New tasks are
// accepted and wait, and its queue threshold and Block apply as usual.
// Running ones finish, and so does a task handed its last permit as the
// pause came, which counts as running already. A paused group's waiting
// tasks hold no permit of the global cap, so pausing one group never holds
// back another. A task of a paused group turned away under RejectCallerRuns
// does not run. It ends REJECTED, as under RejectAbort. Paused false, or
// dropping the override, resumes it. Then what can start starts at once, in
// arrival order. A paused group is never forgotten as idle, and its idle
// time starts when it is resumed. Shutdown does not resume it, so its
// waiting tasks are cancelled when Shutdown's ctx ends.
//
// The zero value overrides nothing. SetGroupOverride copies the values, so
// the pointers may be reused.
type GroupOverride struct {
	MaxConcurrency, MaxInFlight, QueueThreshold, Weight *int
	Paused                                              *bool
}

// IsZero reports whether o overrides nothing.
func (o GroupOverride) IsZero() bool {
	return o.MaxConcurrency == nil && o.MaxInFlight == nil && o.QueueThreshold == nil && o.Weight == nil && o.Paused == nil
}

// clone returns o with its own copies of the values.
func (o GroupOverride) clone() GroupOverride {
	c := func(p *int) *int {
		if p == nil {
			return nil
		}
		n := *p
		return &n
	}
	var paused *bool
	if o.Paused != nil {
		b := *o.Paused
		paused = &b
	}
	return GroupOverride{c(o.MaxConcurrency), c(o.MaxInFlight), c(o.QueueThreshold), c(o.Weight), paused}
}

// check returns an error wrapping ErrInvalidPolicy naming every bad field.
func (o GroupOverride) check(mode IsolationMode) error {
	var bad []string
	for _, f := range []struct {
		name  string
		v     *int
		least int
	}{{"MaxConcurrency", o.MaxConcurrency, 1}, {"MaxInFlight", o.MaxInFlight, 1}, {"QueueThreshold", o.QueueThreshold, 0}, {"Weight", o.Weight, 1}} {
		if f.v != nil && *f.v < f.least {
			bad = append(bad, fmt.Sprintf("%s is %d, want >= %d", f.name, *f.v, f.least))
		}
	}
	if o.Weight != nil && mode != IsolationFairShare {
		bad = append(bad, fmt.Sprintf("Weight needs Isolation(IsolationFairShare), have %v", mode))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: group override: %s", ErrInvalidPolicy, strings.Join(bad, "; "))
	}
	return nil
}

// apply replaces l's limits with o's.
func (o GroupOverride) apply(l *groupstate.Limits) {
	for _, f := range []struct {
		v  *int
		to *int
	}{{o.MaxConcurrency, &l.Concurrency}, {o.MaxInFlight, &l.MaxInFlight}, {o.QueueThreshold, &l.QueueThreshold}, {o.Weight, &l.Weight}} {
		if f.v != nil {
			*f.to = *f.v
		}
	}
	if o.Paused != nil {
		l.Paused = *o.Paused
	}
}

// overrides are an executor's group overrides. Its zero value is ready to
// use.
type overrides struct {
	mu    sync.Mutex
	byKey map[string]override // guarded by mu
	n     atomic.Int64        // len(byKey): group creation skips mu while it is 0

	guards []*guard // guarded by the executor's updating mutex
}

// override is one key's override, tied to the group it was set on. Once that
// group is gone (evicted or forgotten) the override is dead. A new group of
// the key never sees it.
type override struct {
	g *groupstate.Group[task]
	o GroupOverride
}

type guard struct {
	f func(groupKey string, o GroupOverride) error
}

// SetGroupOverride makes o groupKey's override, replacing any it had. An o
// that overrides nothing removes it. The group's limits are resolved again
// at once, policy then override. They are applied as UpdatePolicy applies
// its limits. A raised limit starts the waiting tasks that now fit. A
// lowered one interrupts nothing and drains. An override stays in force
// across UpdatePolicy until it is removed or its group is gone. EvictGroup
// drops it with the group, and so does forgetting the group as idle
// (IdleGroupTTL). The key's next group then resolves its limits from the
// policy alone. To keep a limit for a key across that, put it in the policy.
// A call that returns nil, setting or dropping, is a use of the group:
// its idle time starts anew.
// Pausing or resuming a parent passes over every group of its subtree
// remembered, as UpdatePolicy passes over every group.
//
// A bad value returns an error wrapping ErrInvalidPolicy that names the
// field. So does a Weight without IsolationFairShare. A group the executor
// does not know returns an error wrapping ErrUnknownGroup, and no group is
// created. A new key beyond MaxGroupOverrides returns an error wrapping
// ErrTooManyOverrides. A refusal by a guard (see GuardOverrides) returns
// that guard's error. After Shutdown or Close it returns ErrClosed. On error
// nothing changes. Calls are serialised with each other and with
// UpdatePolicy.
func (e *GroupExecutor) SetGroupOverride(groupKey string, o GroupOverride) error {
	if !e.made() {
		return errNilExecutor
	}
	o = o.clone()
	e.groups.ForgetIdle() // as GroupStats does: a group idle for 2×TTL is gone
	e.updating.Lock()
	defer e.updating.Unlock()
	if e.gate.closed.Load() {
		return ErrClosed
	}
	if err := o.check(e.policy.Load().isolation); err != nil {
		return err
	}
	// Held, the group is not forgotten as idle before the override is in
	// force: a paused group is never idle, and a pause must not be lost.
	g, ok := e.groups.Lookup(groupKey)
	if !ok || !g.Hold() {
		return fmt.Errorf("%w %s: never used, or evicted, or forgotten as idle", ErrUnknownGroup, quoted(groupKey))
	}
	defer g.Unhold()
	for _, gd := range e.overrides.guards {
		if err := callGuard(gd.f, groupKey, o.clone()); err != nil {
			return err
		}
	}
	// An override that sets or drops MaxConcurrency, or changes it,
	// starts an adaptive limit afresh, also at the value it had.
	prev, _ := e.overrides.get(e.groups, groupKey)
	restart := (prev.MaxConcurrency == nil) != (o.MaxConcurrency == nil) ||
		prev.MaxConcurrency != nil && *prev.MaxConcurrency != *o.MaxConcurrency
	if err := e.overrides.set(e.groups, groupKey, g, o); err != nil {
		return err
	}
	e.applyChanges(e.groups.UpdateGroup(g, func(cur groupstate.Limits) groupstate.Limits {
		state := cur.Tuning
		if restart {
			state = nil
		}
		return e.limitsOver(groupKey, state, cur.Concurrency)
	}))
	g.Touch() // held still: the next sweep sees the group used now
	return nil
}

// GroupOverride returns groupKey's override, and false if it has none (or
// its group is gone). A read is no use of the group: its idle time goes on.
func (e *GroupExecutor) GroupOverride(groupKey string) (GroupOverride, bool) {
	if !e.made() {
		return GroupOverride{}, false
	}
	e.groups.ForgetIdle()
	o, ok := e.overrides.get(e.groups, groupKey)
	return o.clone(), ok
}

// GroupOverrides returns an iterator over a snapshot of every override in
// force, by group key in ascending order.
func (e *GroupExecutor) GroupOverrides() iter.Seq2[string, GroupOverride] {
	var s map[string]GroupOverride
	if e.made() {
		e.groups.ForgetIdle()
		s = e.overrides.live(e.groups)
	}
	return func(yield func(string, GroupOverride) bool) {
		for _, k := range slices.Sorted(maps.Keys(s)) {
			if !yield(k, s[k].clone()) {
				return
			}
		}
	}
}

// GuardOverrides has f asked about every override before it is set, so
// that f may refuse it. It is for code that owns some limits, as redisgc's
// fleet-wide ones. Every writer of overrides (httpgc's PATCH, an operator's
// tool) calls SetGroupOverride on the executor itself. So only a guard
// inside the executor can refuse them all, and no wrapper can.
//
// GuardOverrides first asks f about every override in force. If f refuses
// one, it installs nothing and returns that error. The returned remove
// uninstalls f, and it may be called more than once. Overrides and policies
// are locked while f runs. So f must not call SetGroupOverride,
// UpdatePolicy, GuardOverrides or ExplainGroup, and while it waits every
// change of limits waits too. A panic of f refuses the override, with an
// error that names it. Once Shutdown or Close has
// begun it returns ErrClosed, as SetGroupOverride does: there is nothing
// left to guard.
func (e *GroupExecutor) GuardOverrides(f func(groupKey string, o GroupOverride) error) (remove func(), err error) {
	if !e.made() {
		return nil, errNilExecutor
	}
	if f == nil {
		return nil, errors.New("groupconc: GuardOverrides: nil guard")
	}
	e.updating.Lock()
	defer e.updating.Unlock()
	if e.gate.closed.Load() {
		return nil, ErrClosed
	}
	for k, o := range e.GroupOverrides() {
		if err := callGuard(f, k, o); err != nil {
			return nil, err
		}
	}
	gd := &guard{f: f}
	e.overrides.guards = append(e.overrides.guards, gd)
	return func() {
		e.updating.Lock()
		defer e.updating.Unlock()
		e.overrides.guards = slices.DeleteFunc(e.overrides.guards, func(x *guard) bool { return x == gd })
	}, nil
}

// callGuard asks guard f about o, turning a panic of f into its refusal.
func callGuard(f func(groupKey string, o GroupOverride) error, groupKey string, o GroupOverride) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("groupconc: a guard of overrides panicked for %s: %s", quoted(groupKey), quoted(fmt.Sprint(v)))
		}
	}()
	return f(groupKey, o)
}

// get returns key's override if its group is still r's group for key.
func (s *overrides) get(r *groupstate.Registry[task], key string) (GroupOverride, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ov, ok := s.byKey[key]
	if !ok || !alive(r, key, ov.g) {
		return GroupOverride{}, false
	}
	return ov.o, true
}

// set makes o key's override on g, or removes it if o is zero.
func (s *overrides) set(r *groupstate.Registry[task], key string, g *groupstate.Group[task], o GroupOverride) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.n.Store(int64(len(s.byKey))) }()
	if o.IsZero() {
		delete(s.byKey, key)
		return nil
	}
	if !alive(r, key, g) { // evicted as the guards ran: drop has been
		return fmt.Errorf("%w %s: evicted as its override was set", ErrUnknownGroup, quoted(key))
	}
	if _, ok := s.byKey[key]; !ok && len(s.byKey) >= MaxGroupOverrides {
		maps.DeleteFunc(s.byKey, func(k string, ov override) bool { return !alive(r, k, ov.g) })
		if len(s.byKey) >= MaxGroupOverrides {
			return fmt.Errorf("%w: %d keys have one, the most an executor keeps; remove one first", ErrTooManyOverrides, len(s.byKey))
		}
	}
	if s.byKey == nil {
		s.byKey = make(map[string]override)
	}
	s.byKey[key] = override{g: g, o: o}
	return nil
}

// drop forgets g's override, if it has one, as g is forgotten or evicted.
// One set on g as it went is found dead by get and live, and dropped at
// the latest when MaxGroupOverrides keys have one.
func (s *overrides) drop(g *groupstate.Group[task]) {
	if s.n.Load() == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ov, ok := s.byKey[g.Key()]; ok && ov.g == g {
		delete(s.byKey, g.Key())
		s.n.Store(int64(len(s.byKey)))
	}
}

// live returns the overrides whose groups are still r's.
func (s *overrides) live(r *groupstate.Registry[task]) map[string]GroupOverride {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]GroupOverride, len(s.byKey))
	for k, ov := range s.byKey {
		if alive(r, k, ov.g) {
			m[k] = ov.o
		}
	}
	return m
}

// alive reports whether g is still r's group for key.
func alive(r *groupstate.Registry[task], key string, g *groupstate.Group[task]) bool {
	cur, ok := r.Lookup(key)
	return ok && cur == g
}
