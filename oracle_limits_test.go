package groupconc_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kobe/groupconc"
)

// oracleLimits are the caps checked by checkLimits; a cap of Unlimited (or a
// nil group function) is not checked.
type oracleLimits struct {
	global int
	group  func(gaugeKey string) int // running cap: min(concurrency, bulkhead)
}

// oracleLimitsOf returns p's caps; a gauge key "k#n" is checked against
// group k's limits.
func oracleLimitsOf(p *groupconc.GroupPolicy) oracleLimits {
	return oracleLimits{
		global: p.GlobalMaxInFlight(),
		group: func(gaugeKey string) int {
			k, _, _ := strings.Cut(gaugeKey, "#")
			return min(p.ResolveConcurrency(k), p.ResolveMaxInFlight(k))
		},
	}
}

// checkLimits checks I1 on the gauges: no cap was ever exceeded.
//
// With o.live set, lim is ignored: the limits in force when each function
// started decide (see oracleLive).
func (o *oracle) checkLimits(t testing.TB, lim oracleLimits) bool {
	t.Helper()
	if o.live != nil {
		return o.live.check(t)
	}
	ok := true
	if m := o.gauges.global.max.Load(); lim.global != groupconc.Unlimited && m > int64(lim.global) {
		t.Errorf("I1: %d functions ran at once over all groups, want <= %d", m, lim.global)
		ok = false
	}
	if lim.group == nil {
		return ok
	}
	o.gauges.groups.Range(func(k, g any) bool {
		if c, m := lim.group(k.(string)), g.(*oracleGauge).max.Load(); c != groupconc.Unlimited && m > int64(c) {
			t.Errorf("I1: %d functions of %q ran at once, want <= %d", m, k, c)
			ok = false
		}
		return true
	})
	return ok
}

// globalMax and groupMax report the gauges' maxima.
func (o *oracle) globalMax() int64 { return o.gauges.global.max.Load() }

func (o *oracle) groupMax(gaugeKey string) int64 { return o.gauges.group(gaugeKey).max.Load() }

// checkStill checks I1 on a snapshot of the executor, which must be still
// (inside a bubble after synctest.Wait): the counts of running, in-flight and
// waiting tasks of each group in keys never exceed the limits and the queue
// thresholds of p. Under IsolationOff a waiting task holds a global queue
// slot or one of its group's, so a group's waiting tasks are at most its
// threshold plus the global one; under IsolationFairShare the group's
// threshold counts its tasks waiting at every layer.
//
// With o.live set (p is then the policy in force), a lowered limit may be
// exceeded while it drains: a group's running tasks are bounded by the
// limits in force since its oldest running task started, its in-flight and
// the global in-flight tasks by the larger of the limit and the running
// tasks (those holding a permit but waiting further in go back to its
// line), and its waiting tasks by the largest threshold in force since it
// was last seen with none waiting (a lowered threshold rejects no waiting
// task).
func (o *oracle) checkStill(t testing.TB, e *groupconc.GroupExecutor, p *groupconc.GroupPolicy, keys []string) bool {
	t.Helper()
	ok := true
	s := e.Stats()
	live := o.live
	globalCap := p.GlobalMaxInFlight()
	if live != nil {
		globalCap = max(globalCap, live.allowed(oracleGlobalScope))
	}
	if globalCap != groupconc.Unlimited && s.GlobalInFlight > globalCap {
		t.Errorf("I1: Stats().GlobalInFlight = %d, want <= %d", s.GlobalInFlight, globalCap)
		ok = false
	}
	fair := p.Isolation() == groupconc.IsolationFairShare
	gq := p.GlobalQueueThreshold()
	if live != nil {
		gq = live.waitBound(oracleGlobalScope, s.Waiting, func(p *groupconc.GroupPolicy) int { return p.GlobalQueueThreshold() })
	}
	sumQ, unbounded := gq, gq == groupconc.Unlimited
	for _, k := range keys {
		gs, found := e.GroupStats(k)
		if !found {
			continue
		}
		runCap, inFlightCap := min(gs.MaxConcurrency, gs.MaxInFlight), gs.MaxInFlight
		q := gs.QueueThreshold
		if live != nil {
			runCap = max(runCap, live.allowed(live.scopeOf(k)))
			inFlightCap = max(inFlightCap, gs.Running)
			q = live.waitBound(k, gs.Waiting, func(p *groupconc.GroupPolicy) int { return p.ResolveQueueThreshold(k) })
		}
		if runCap != groupconc.Unlimited && gs.Running > runCap {
			t.Errorf("I1: group %q Running = %d, want <= %d (MaxConcurrency %d, MaxInFlight %d)", k, gs.Running, runCap, gs.MaxConcurrency, gs.MaxInFlight)
			ok = false
		}
		if inFlightCap != groupconc.Unlimited && gs.InFlight > inFlightCap {
			t.Errorf("I1: group %q InFlight = %d, want <= %d", k, gs.InFlight, inFlightCap)
			ok = false
		}
		if fair && q != groupconc.Unlimited && gs.Waiting > q {
			t.Errorf("I1: group %q Waiting = %d, want <= %d (its threshold, every layer)", k, gs.Waiting, q)
			ok = false
		}
		if q == groupconc.Unlimited || gq == groupconc.Unlimited {
			unbounded = true
			continue
		}
		sumQ += q
		if gs.Waiting > q+gq {
			t.Errorf("I1: group %q Waiting = %d, want <= %d (group) + %d (global)", k, gs.Waiting, q, gq)
			ok = false
		}
	}
	if !unbounded && s.Waiting > sumQ {
		t.Errorf("I1: Stats().Waiting = %d, want <= %d (sum of thresholds)", s.Waiting, sumQ)
		ok = false
	}
	return ok
}

// oracleGlobalScope is the scope of oracleLive's global limit; every other
// scope is a gauge key.
const oracleGlobalScope = "\x00global"

// oracleLive holds the policies an executor had over time, one epoch each,
// and checks every function's start against them (I1 under UpdatePolicy): a
// function may start while its scope's running count, itself included, is
// at most the largest limit in force since the oldest function running in
// that scope started. When the limit has not changed since then, that is
// the limit itself, as strict as without UpdatePolicy. It is safe for
// concurrent use.
type oracleLive struct {
	// scopeOf maps a group key to the gauge key of its current state (a
	// key plus an eviction generation); nil means the key itself.
	scopeOf func(groupKey string) string

	mu        sync.Mutex
	policies  []*groupconc.GroupPolicy // guarded by mu: policies[i] in force from epoch i
	running   map[string]map[int]int   // guarded by mu: scope -> start epoch -> functions
	count     map[string]int           // guarded by mu: scope -> functions running
	waitSince map[string]int           // guarded by mu: scope -> epoch it was last seen with none waiting
	errs      []string                 // guarded by mu
}

func newOracleLive(p *groupconc.GroupPolicy) *oracleLive {
	return &oracleLive{
		scopeOf:   func(k string) string { return k },
		policies:  []*groupconc.GroupPolicy{p},
		running:   make(map[string]map[int]int),
		count:     make(map[string]int),
		waitSince: make(map[string]int),
	}
}

// update starts a new epoch with p in force. Call it just before
// UpdatePolicy(p), and again with the old policy if that fails.
func (l *oracleLive) update(p *groupconc.GroupPolicy) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.policies = append(l.policies, p)
}

// limitOf is the running cap of scope under p.
func oracleLiveLimit(p *groupconc.GroupPolicy, scope string) int {
	if scope == oracleGlobalScope {
		return p.GlobalMaxInFlight()
	}
	k, _, _ := strings.Cut(scope, "#")
	return min(p.ResolveConcurrency(k), p.ResolveMaxInFlight(k))
}

// maxSinceLocked returns the largest value f gives for the policies in force
// from epoch since on.
func (l *oracleLive) maxSinceLocked(since int, f func(p *groupconc.GroupPolicy) int) int {
	m := 0
	for _, p := range l.policies[since:] {
		m = max(m, f(p))
	}
	return m
}

// allowedLocked returns the most functions scope may run now.
func (l *oracleLive) allowedLocked(scope string) int {
	since := len(l.policies) - 1
	for ep := range l.running[scope] {
		since = min(since, ep)
	}
	return l.maxSinceLocked(since, func(p *groupconc.GroupPolicy) int { return oracleLiveLimit(p, scope) })
}

// allowed returns the most functions scope may run now.
func (l *oracleLive) allowed(scope string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.allowedLocked(scope)
}

// enter records a function of gaugeKey starting, checks the global and the
// group limits, and returns the function that records its end.
func (l *oracleLive) enter(gaugeKey string) (exit func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	epoch := len(l.policies) - 1
	scopes := [2]string{oracleGlobalScope, gaugeKey}
	for _, sc := range scopes {
		if l.running[sc] == nil {
			l.running[sc] = make(map[int]int)
		}
		l.running[sc][epoch]++
		l.count[sc]++
		if c, a := l.count[sc], l.allowedLocked(sc); a != groupconc.Unlimited && c > a && len(l.errs) < 20 {
			l.errs = append(l.errs, fmt.Sprintf("%d functions of %q ran at once in epoch %d, want <= %d (the limits in force since the oldest of them started)", c, sc, epoch, a))
		}
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, sc := range scopes {
			l.count[sc]--
			if l.running[sc][epoch]--; l.running[sc][epoch] == 0 {
				delete(l.running[sc], epoch)
			}
		}
	}
}

// waitBound returns the most tasks scope (a group key, or
// oracleGlobalScope) may have waiting, given that it has waiting now: the
// largest threshold f gives since it was last seen with none.
func (l *oracleLive) waitBound(scope string, waiting int, f func(p *groupconc.GroupPolicy) int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if waiting == 0 {
		l.waitSince[scope] = len(l.policies) - 1
	}
	return l.maxSinceLocked(l.waitSince[scope], f)
}

// check reports the starts that exceeded the limits.
func (l *oracleLive) check(t testing.TB) bool {
	t.Helper()
	l.mu.Lock()
	errs := slices.Clone(l.errs)
	l.mu.Unlock()
	for _, e := range errs {
		t.Errorf("I1: %s", e)
	}
	return len(errs) == 0
}
