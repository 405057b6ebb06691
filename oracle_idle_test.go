package groupconc_test

import (
	"testing"

	"github.com/kobe/groupconc"
)

// checkNoIdlePermits is I8, checked between steps once every goroutine has
// settled: no permit is left free while a task that could use it waits. It
// checks the case it can decide from the stats alone. A group that is not
// paused (nor under a paused ancestor), with tasks of its own waiting, while
// neither it nor any ancestor runs a task of its subtree and no global
// permit is held (or the cap is Unlimited), has a waiting task that fits in
// every limit of its chain: one of them must be running by now.
func checkNoIdlePermits(t testing.TB, e *groupconc.GroupExecutor, maxCost int) bool {
	t.Helper()
	s := e.Stats()
	if !room(s.GlobalInFlight, s.GlobalMaxInFlight, maxCost) {
		return true
	}
	all, kids := statsAndKids(e, func(gs groupconc.GroupStats) int { return gs.Waiting })
	ok := true
	for k, gs := range all {
		if gs.Paused || gs.Waiting-kids[k] <= 0 {
			continue
		}
		if chainHolds(all, k, func(as groupconc.GroupStats) bool { return fits(as, maxCost) }) {
			t.Errorf("I8: group %q has %d tasks of its own waiting while its chain runs nothing and the global cap is free (%+v)", k, gs.Waiting-kids[k], gs)
			ok = false
		}
	}
	return ok
}

// room reports whether a limit holding held permits has room for a task
// of any cost up to maxCost, or holds none (a task costlier than the limit
// takes the whole of it).
func room(held, limit, maxCost int) bool {
	return held == 0 || limit == groupconc.Unlimited || held+maxCost <= limit
}

// fuzzMaxCost is the largest cost a task of shape sh may have.
func fuzzMaxCost(sh *fuzzShape) int {
	if sh.costs {
		return 5
	}
	return 1
}

// checkSubtreeSums is I9, checked between steps: a parent's counts cover
// its children's (and its own tasks', and its evicted children's still
// running), and the executor's cover its top-level groups'. InFlight is
// left out: a child's task past its own bulkhead may wait for its parent's.
func checkSubtreeSums(t testing.TB, e *groupconc.GroupExecutor) bool {
	t.Helper()
	type sums struct {
		running, waiting, wglobal, blocked int
		outcomes                           [4]uint64
	}
	all := map[string]groupconc.GroupStats{}
	for gs := range e.AllGroupStats() {
		all[gs.GroupKey] = gs
	}
	of := func(gs groupconc.GroupStats) sums {
		return sums{gs.Running, gs.Waiting, gs.WaitingGlobal, gs.Blocked, [4]uint64{gs.Succeeded, gs.Failed, gs.Cancelled, gs.Rejected}}
	}
	kids := map[string]sums{}
	var top sums
	add := func(m *sums, s sums) {
		m.running += s.running
		m.waiting += s.waiting
		m.wglobal += s.wglobal
		m.blocked += s.blocked
		for i := range s.outcomes {
			m.outcomes[i] += s.outcomes[i]
		}
	}
	for _, gs := range all {
		if gs.Parent == "" {
			add(&top, of(gs))
			continue
		}
		m := kids[gs.Parent]
		add(&m, of(gs))
		kids[gs.Parent] = m
	}
	ok := true
	le := func(what string, a, b sums) {
		bad := a.running > b.running || a.waiting > b.waiting || a.wglobal > b.wglobal || a.blocked > b.blocked
		for i := range a.outcomes {
			bad = bad || a.outcomes[i] > b.outcomes[i]
		}
		if bad {
			t.Errorf("I9: %s: the parts add up to %+v, more than the whole %+v", what, a, b)
			ok = false
		}
	}
	for k, m := range kids {
		if p, found := all[k]; found {
			le("children of "+k, m, of(p))
		}
	}
	s := e.Stats()
	le("top-level groups", sums{running: top.running, waiting: top.waiting, blocked: top.blocked, outcomes: top.outcomes},
		sums{running: s.Running, waiting: s.Waiting, blocked: s.Blocked, outcomes: [4]uint64{s.Succeeded, s.Failed, s.Cancelled, s.Rejected}})
	if top.waiting != s.Waiting || top.blocked != s.Blocked {
		t.Errorf("I9: the top-level groups have %d waiting and %d blocked, the executor %d and %d", top.waiting, top.blocked, s.Waiting, s.Blocked)
		ok = false
	}
	return ok
}

// checkNoCallerBlockedOnRoom is I10, checked between steps: a caller
// blocked for a queue slot is let in once its queue has room. A group whose
// own callers are blocked while it, each ancestor, and under IsolationOff
// the global queue, hold fewer tasks waiting than their thresholds (a
// group's slots are held by waiting tasks of its subtree, so by fewer than
// its Waiting) has a slot for the first of them. Behind a queue of no
// slots, it is let in once its task can start (I8's test, from the queue
// up its chain).
func checkNoCallerBlockedOnRoom(t testing.TB, e *groupconc.GroupExecutor, maxCost int) bool {
	t.Helper()
	s := e.Stats()
	globalFree := room(s.GlobalInFlight, s.GlobalMaxInFlight, maxCost)
	if gq := e.Policy().GlobalQueueThreshold(); gq != groupconc.Unlimited && s.Waiting >= gq {
		return true
	}
	all, kids := statsAndKids(e, func(gs groupconc.GroupStats) int { return gs.Blocked })
	ok := true
	for k, gs := range all {
		if gs.Blocked-kids[k] <= 0 {
			continue
		}
		zero := false
		free := chainHolds(all, k, func(as groupconc.GroupStats) bool {
			if as.QueueThreshold != 0 && as.QueueThreshold != groupconc.Unlimited && as.Waiting >= as.QueueThreshold {
				return false
			}
			// A queue of no slots lets a caller in once its task can
			// start, as I8 decides it from the stats.
			zero = zero || as.QueueThreshold == 0
			return !zero || !gs.Paused && globalFree && fits(as, maxCost)
		})
		if free {
			t.Errorf("I10: group %q has %d callers of its own blocked while every queue of its chain has room (%+v)", k, gs.Blocked-kids[k], gs)
			ok = false
		}
	}
	return ok
}

// statsAndKids returns every group's stats by key, and for each parent the
// sum of count over its children, whose subtrees its own counts cover. A
// group's count less its kids' is its own tasks'.
func statsAndKids(e *groupconc.GroupExecutor, count func(groupconc.GroupStats) int) (map[string]groupconc.GroupStats, map[string]int) {
	all := map[string]groupconc.GroupStats{}
	kids := map[string]int{}
	for gs := range e.AllGroupStats() {
		all[gs.GroupKey] = gs
	}
	for _, gs := range all {
		if gs.Parent != "" {
			kids[gs.Parent] += count(gs)
		}
	}
	return all, kids
}

// chainHolds reports whether f holds for group k and each of its
// ancestors (at most 10), all of them known.
func chainHolds(all map[string]groupconc.GroupStats, k string, f func(groupconc.GroupStats) bool) bool {
	for a, seen := k, 0; a != "" && seen < 10; seen++ {
		as, found := all[a]
		if !found || !f(as) {
			return false
		}
		a = as.Parent
	}
	return true
}

// fits reports whether a task of cost up to maxCost fits in the limits of
// the group as, or the group runs nothing.
func fits(as groupconc.GroupStats, maxCost int) bool {
	return as.Running == 0 || room(as.RunningCost, as.MaxConcurrency, maxCost) && room(as.InFlight*maxCost, as.MaxInFlight, maxCost)
}
