package groupconc_test

// The oracle's view of costs, parents and group overrides (I1): a task of
// cost c holds min(c, limit) permits at its group's limits and at each
// ancestor's, and a group's subtree never holds more than its limit. A
// paused group, or one under a paused ancestor, starts nothing.

import (
	"fmt"
	"maps"
	"strings"

	"github.com/kobe/groupconc"
)

// oracleEpoch is what is in force for a while: a policy and the group
// overrides set on the groups of the gauge keys named.
type oracleEpoch struct {
	p    *groupconc.GroupPolicy
	over map[string]oracleOverride // gauge key -> override
}

// oracleOverride is a group override as the oracle knows it. A loose one
// may be gone (an idle TTL was on since it was set, and an idle group
// forgets its override), so the policy's limits may be in force instead.
type oracleOverride struct {
	o     groupconc.GroupOverride
	loose bool
}

// oracleBase returns the group key of a gauge key ("k#n" -> "k").
func oracleBase(gaugeKey string) string {
	k, _, _ := strings.Cut(gaugeKey, "#")
	return k
}

// limits returns the concurrency limit and the bulkhead of scope's group,
// override included.
func (ep *oracleEpoch) limits(scope string) (conc, inFlight int) {
	k := oracleBase(scope)
	conc, inFlight = ep.p.ResolveConcurrency(k), ep.p.ResolveMaxInFlight(k)
	ov, ok := ep.over[scope]
	if !ok {
		return conc, inFlight
	}
	c, b := conc, inFlight
	if ov.o.MaxConcurrency != nil {
		c = *ov.o.MaxConcurrency
	}
	if ov.o.MaxInFlight != nil {
		b = *ov.o.MaxInFlight
	}
	if ov.loose {
		return max(c, conc), max(b, inFlight)
	}
	return c, b
}

// limit is the running cap of scope: min(concurrency, bulkhead) for a
// group. A task holds min(cost, that) there at least, so the sum of those
// never exceeds it.
func (ep *oracleEpoch) limit(scope string) int {
	if scope == oracleGlobalScope {
		return ep.p.GlobalMaxInFlight()
	}
	c, b := ep.limits(scope)
	return min(c, b)
}

// threshold is the queue threshold of scope's group, override included.
func (ep *oracleEpoch) threshold(scope string) int {
	q := ep.p.ResolveQueueThreshold(oracleBase(scope))
	if ov, ok := ep.over[scope]; ok && ov.o.QueueThreshold != nil {
		if ov.loose {
			return max(q, *ov.o.QueueThreshold)
		}
		return *ov.o.QueueThreshold
	}
	return q
}

// paused reports whether scope's group is paused by its own override. A
// paused group is never forgotten, so a loose pause holds too.
func (ep *oracleEpoch) paused(scope string) bool {
	ov, ok := ep.over[scope]
	return ok && ov.o.Paused != nil && *ov.o.Paused
}

// pushLocked starts an epoch with p in force (nil: the last one) and over
// as the overrides (nil: the last ones). Overrides loosen once an idle TTL
// is on.
func (l *oracleLive) pushLocked(p *groupconc.GroupPolicy, over map[string]oracleOverride) {
	last := l.epochs[len(l.epochs)-1]
	if p == nil {
		p = last.p
	}
	if over == nil {
		over = maps.Clone(last.over)
	}
	if p.IdleGroupTTL() > 0 {
		for k, ov := range over {
			ov.loose = true
			over[k] = ov
		}
	}
	l.epochs = append(l.epochs, oracleEpoch{p: p, over: over})
}

// epoch returns the epoch in force.
func (l *oracleLive) epoch() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.epochs) - 1
}

// setOverride starts an epoch with o as the override of gaugeKey's group
// (none if o is zero), and returns the function that undoes it (for a
// SetGroupOverride that failed). Call it just before SetGroupOverride.
func (l *oracleLive) setOverride(gaugeKey string, o groupconc.GroupOverride) (undo func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	before := maps.Clone(l.epochs[len(l.epochs)-1].over)
	over := maps.Clone(before)
	if over == nil {
		over = make(map[string]oracleOverride)
	}
	if o.IsZero() {
		delete(over, gaugeKey)
	} else {
		over[gaugeKey] = oracleOverride{o: o}
	}
	l.pushLocked(nil, over)
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if before == nil {
			before = make(map[string]oracleOverride)
		}
		l.pushLocked(nil, before)
	}
}

// chain returns the gauge keys of groupKey's group and of its ancestors,
// nearest first, as the policy in force resolves them.
func (l *oracleLive) chain(groupKey string) []string {
	l.mu.Lock()
	p := l.epochs[len(l.epochs)-1].p
	l.mu.Unlock()
	chain := []string{l.scopeOf(groupKey)}
	for k := p.ResolveParent(groupKey); k != "" && len(chain) <= groupconc.MaxAncestors; k = p.ResolveParent(k) {
		chain = append(chain, l.scopeOf(k))
	}
	return chain
}

// oracleEntry is a function about to run: the gauge keys it holds permits
// in (its group's, then its ancestors'), its cost, and the epoch it was
// submitted in.
type oracleEntry struct {
	chain []string
	cost  int
	since int
}

// enterTask records the function of x starting, checks the global, group
// and ancestor limits and the pauses, and returns the function that
// records its end. At each scope the function counts min(cost, the least
// limit in force there since it was submitted): it holds at least that.
func (l *oracleLive) enterTask(x oracleEntry) (exit func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	epoch := len(l.epochs) - 1
	cost := max(x.cost, 1)
	scopes := append([]string{oracleGlobalScope}, x.chain...)
	held, from := make([]int, len(scopes)), make([]int, len(scopes))
	for i, sc := range scopes {
		least := groupconc.Unlimited
		for j := range l.epochs[x.since:] {
			least = min(least, l.epochs[x.since+j].limit(sc))
		}
		held[i] = min(cost, max(least, 1))
		if l.running[sc] == nil {
			l.running[sc] = make(map[int]int)
		}
		from[i] = epoch
		l.running[sc][from[i]] += held[i]
		l.count[sc] += held[i]
		l.costs[sc] += cost
		if c, a := l.count[sc], l.allowedLocked(sc); a != groupconc.Unlimited && c > a {
			l.failLocked("%d permits held at %q by running functions (one of cost %d starting) in epoch %d, want <= %d (the limits in force since the oldest of them started)", c, sc, cost, epoch, a)
		}
		if i > 0 && l.epochs[epoch].paused(sc) {
			l.failLocked("a function of %q started in epoch %d while %q is paused", x.chain[0], epoch, sc)
		}
	}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for i, sc := range scopes {
			l.count[sc] -= held[i]
			l.costs[sc] -= cost
			if l.running[sc][from[i]] -= held[i]; l.running[sc][from[i]] == 0 {
				delete(l.running[sc], from[i])
			}
		}
	}
}

func (l *oracleLive) failLocked(format string, args ...any) {
	if len(l.errs) < 20 {
		l.errs = append(l.errs, fmt.Sprintf(format, args...))
	}
}

// costOf returns the sum of the costs of scope's running functions: a
// bound on the permits they hold at any of its layers.
func (l *oracleLive) costOf(scope string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.costs[scope]
}

// thresholdBound is waitBound for the queue threshold of a group, its
// override included.
//
// Under IsolationOff a pause parks the tasks that waited for the global
// cap. They give their global slot back and wait on in their group's
// queue, past its threshold. So a paused group may hold the global
// threshold more.
func (l *oracleLive) thresholdBound(groupKey string, waiting int) int {
	sc := l.scopeOf(groupKey)
	return l.waitBoundOf(groupKey, waiting, func(ep *oracleEpoch) int {
		q, gq := ep.threshold(sc), ep.p.GlobalQueueThreshold()
		if ep.p.Isolation() == groupconc.IsolationOff && q != groupconc.Unlimited && gq != groupconc.Unlimited && l.pausedChain(ep, groupKey) {
			q += gq
		}
		return q
	})
}

// pausedChain reports whether groupKey's group or an ancestor is paused in
// ep.
func (l *oracleLive) pausedChain(ep *oracleEpoch, groupKey string) bool {
	for k := groupKey; k != ""; k = ep.p.ResolveParent(k) {
		if ep.paused(l.scopeOf(k)) {
			return true
		}
	}
	return false
}

// setCallerRuns records whether p runs a rejected task on its caller
// (RejectCallerRuns with no handler). Call it before update(p).
func (l *oracleLive) setCallerRuns(p *groupconc.GroupPolicy, callerRuns bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.callerRuns == nil {
		l.callerRuns = make(map[*groupconc.GroupPolicy]bool)
	}
	l.callerRuns[p] = callerRuns
}

// checkOutside checks a function of x run after its rejection: under
// RejectCallerRuns, a task of a paused group is rejected and never runs.
func (l *oracleLive) checkOutside(x oracleEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ep := &l.epochs[len(l.epochs)-1]
	if len(x.chain) > 0 && l.callerRuns[ep.p] && ep.paused(x.chain[0]) {
		l.failLocked("a task of paused %q ran on its caller after a rejection under RejectCallerRuns", x.chain[0])
	}
}
