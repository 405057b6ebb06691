package groupconc_test

import (
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
// threshold counts its tasks waiting at every layer. With parents a
// group's counts cover its subtree, and a task waiting for an ancestor's
// limit holds a slot of that ancestor's queue: a group's waiting tasks are
// then bounded by the thresholds of its chain, and a group with a child
// known has only the bound on the total.
//
// With o.live set (p is then the policy in force), a lowered limit may be
// exceeded while it drains: a group's running tasks are bounded by the
// limits in force since its oldest running task started, its in-flight and
// the global in-flight permits by the larger of the limit and the costs of
// the running tasks (those holding a permit but waiting further in go back
// to its line), and its waiting tasks by the largest threshold in force
// since it was last seen with none waiting (a lowered threshold rejects no
// waiting task).
func (o *oracle) checkStill(t testing.TB, e *groupconc.GroupExecutor, p *groupconc.GroupPolicy, keys []string) bool {
	t.Helper()
	const u = groupconc.Unlimited
	ok := true
	s := e.Stats()
	live := o.live
	globalCap := p.GlobalMaxInFlight()
	if live != nil {
		globalCap = max(globalCap, live.allowed(oracleGlobalScope), live.costOf(oracleGlobalScope))
	}
	if globalCap != u && s.GlobalInFlight > globalCap {
		t.Errorf("I1: Stats().GlobalInFlight = %d, want <= %d", s.GlobalInFlight, globalCap)
		ok = false
	}
	fair := p.Isolation() == groupconc.IsolationFairShare
	gq := p.GlobalQueueThreshold()
	if live != nil {
		gq = live.waitBound(oracleGlobalScope, s.Waiting, func(p *groupconc.GroupPolicy) int { return p.GlobalQueueThreshold() })
	}
	stats := make(map[string]groupconc.GroupStats, len(keys))
	q := make(map[string]int, len(keys))
	parent := make(map[string]bool, len(keys))
	for _, k := range keys {
		gs, found := e.GroupStats(k)
		if !found {
			continue
		}
		stats[k], q[k] = gs, gs.QueueThreshold
		if live != nil {
			q[k] = live.thresholdBound(k, gs.Waiting)
		}
		for a := p.ResolveParent(k); a != ""; a = p.ResolveParent(a) {
			parent[a] = true
		}
	}
	sumQ, unbounded := gq, gq == u
	for _, k := range keys {
		gs, found := stats[k]
		if !found {
			continue
		}
		runCap, inFlightCap := min(gs.MaxConcurrency, gs.MaxInFlight), gs.MaxInFlight
		if live != nil {
			sc := live.scopeOf(k)
			runCap = max(runCap, live.allowed(sc))
			inFlightCap = max(inFlightCap, gs.Running, live.costOf(sc))
		}
		if runCap != u && gs.Running > runCap {
			t.Errorf("I1: group %q Running = %d, want <= %d (MaxConcurrency %d, MaxInFlight %d)", k, gs.Running, runCap, gs.MaxConcurrency, gs.MaxInFlight)
			ok = false
		}
		if inFlightCap != u && gs.InFlight > inFlightCap {
			t.Errorf("I1: group %q InFlight = %d, want <= %d", k, gs.InFlight, inFlightCap)
			ok = false
		}
		if q[k] == u {
			unbounded = true
		} else if !unbounded {
			sumQ += q[k]
		}
		chainQ := 0
		for a := k; a != ""; a = p.ResolveParent(a) {
			qa, known := q[a]
			if !known || qa == u {
				chainQ = u
				break
			}
			chainQ += qa
		}
		if parent[k] || chainQ == u {
			continue
		}
		if fair && gs.Waiting > chainQ {
			t.Errorf("I1: group %q Waiting = %d, want <= %d (its chain's thresholds, every layer)", k, gs.Waiting, chainQ)
			ok = false
		}
		if gq != u && gs.Waiting > chainQ+gq {
			t.Errorf("I1: group %q Waiting = %d, want <= %d (its chain's thresholds) + %d (global)", k, gs.Waiting, chainQ, gq)
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

// oracleLive holds the limits an executor had over time, one epoch each
// (a policy and the group overrides in force), and checks every function's
// start against them (I1 under UpdatePolicy and SetGroupOverride): a
// function may start while the permits its scope's running functions hold,
// its own included, are at most the largest limit in force since the oldest
// of them started. When the limit has not changed since then, that is the
// limit itself, as strict as without UpdatePolicy. A scope is the global
// cap or a group's gauge key; a function holds permits in its group's scope
// and in each ancestor's (see oracle_tree_test.go). It is safe for
// concurrent use.
type oracleLive struct {
	// scopeOf maps a group key to the gauge key of its current state (a
	// key plus an eviction generation); nil means the key itself.
	scopeOf func(groupKey string) string

	mu        sync.Mutex
	epochs    []oracleEpoch          // guarded by mu: epochs[i] in force from epoch i
	running   map[string]map[int]int // guarded by mu: scope -> start epoch -> permits held
	count     map[string]int         // guarded by mu: scope -> permits held by running functions
	costs     map[string]int         // guarded by mu: scope -> costs of its running functions
	waitSince map[string]int         // guarded by mu: scope -> epoch it was last seen with none waiting
	// callerRuns is guarded by mu: the policies that run a rejected task
	// on its caller (see setCallerRuns).
	callerRuns map[*groupconc.GroupPolicy]bool
	errs       []string // guarded by mu
}

func newOracleLive(p *groupconc.GroupPolicy) *oracleLive {
	return &oracleLive{
		scopeOf:   func(k string) string { return k },
		epochs:    []oracleEpoch{{p: p}},
		running:   make(map[string]map[int]int),
		count:     make(map[string]int),
		costs:     make(map[string]int),
		waitSince: make(map[string]int),
	}
}

// update starts a new epoch with p in force and the overrides kept. Call it
// just before UpdatePolicy(p), and again with the old policy if that fails.
func (l *oracleLive) update(p *groupconc.GroupPolicy) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pushLocked(p, nil)
}

// maxSinceLocked returns the largest value f gives for the epochs from
// since on.
func (l *oracleLive) maxSinceLocked(since int, f func(ep *oracleEpoch) int) int {
	m := 0
	for i := range l.epochs[since:] {
		m = max(m, f(&l.epochs[since+i]))
	}
	return m
}

// allowedLocked returns the most permits scope's functions may hold now.
func (l *oracleLive) allowedLocked(scope string) int {
	since := len(l.epochs) - 1
	for ep := range l.running[scope] {
		since = min(since, ep)
	}
	return l.maxSinceLocked(since, func(ep *oracleEpoch) int { return ep.limit(scope) })
}

// allowed returns the most permits scope's functions may hold now.
func (l *oracleLive) allowed(scope string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.allowedLocked(scope)
}

// enter records a function of gaugeKey of cost 1 and no parent starting,
// checks the global and the group limits, and returns the function that
// records its end.
func (l *oracleLive) enter(gaugeKey string) (exit func()) {
	return l.enterTask(oracleEntry{chain: []string{gaugeKey}, cost: 1, since: l.epoch()})
}

// waitBound returns the most tasks scope (a group key, or
// oracleGlobalScope) may have waiting, given that it has waiting now: the
// largest threshold f gives since it was last seen with none.
func (l *oracleLive) waitBound(scope string, waiting int, f func(p *groupconc.GroupPolicy) int) int {
	return l.waitBoundOf(scope, waiting, func(ep *oracleEpoch) int { return f(ep.p) })
}

func (l *oracleLive) waitBoundOf(scope string, waiting int, f func(ep *oracleEpoch) int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if waiting == 0 {
		l.waitSince[scope] = len(l.epochs) - 1
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
