package groupstate

import "sync"

// active lists the groups that may have something going on, so that a
// snapshot of them costs what is active, not what is remembered. A group
// is active while it has a task not yet over (refs > 0) or is paused. A
// task is counted in refs from Enter to Exit. So that covers tasks
// running, waiting, in flight, and callers blocked for a queue slot.
//
// A group joins the list when it turns active and its listed flag is
// clear. In steady state that is one load of the flag per 0→1 of refs.
// Joins are rare, so a mutex and a slice serve. A sweep drops the groups
// found idle or gone. It clears the flag before it looks again. So a group
// that turns active meanwhile is either kept by the sweep or joins anew,
// never lost and never listed twice (see sweepLocked).
//
// Nothing else shrinks the list, and no goroutine is kept for it. So a
// join that finds the list twice as long as after the last sweep sweeps
// it. The list then stays within twice the active groups, plus a little,
// whether or not anyone takes snapshots. Each join costs O(1), amortised.
type active[T any] struct {
	mu     sync.Mutex
	groups []*Group[T] // guarded by mu; each has listed set
	kept   int         // guarded by mu; len(groups) after the last sweep
}

// minSweep is how long the list may grow before a join sweeps it.
const minSweep = 64

// join lists g unless it is listed already. It is called when g turns
// active: on a 0→1 of its refs, and when it is paused.
func (a *active[T]) join(g *Group[T]) {
	if g.listed.Load() || !g.listed.CompareAndSwap(false, true) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.groups = append(a.groups, g)
	if len(a.groups) >= 2*a.kept+minSweep {
		a.sweepLocked()
	}
}

// snapshot sweeps the list and appends the groups kept to out.
func (a *active[T]) snapshot(out []*Group[T]) []*Group[T] {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sweepLocked()
	return append(out, a.groups...)
}

// sweepLocked drops the groups found gone or idle from the list.
//
// Interleaving with a task entering g: the sweep clears g's listed flag
// and then loads refs again. The task adds to refs and then loads the
// flag (see Group.enter). Atomics are sequentially consistent. So either
// the sweep sees the task's ref, or the task sees the flag clear. If the
// sweep sees the ref, it sets the flag back. Only one of the two can do
// that, by the CompareAndSwap. The task that wins appends g once the
// sweep lets go of mu. A sweep that wins keeps g where it is (held open
// by TestActiveListKeepsAGroupEnteredAsASweepClearsItsFlag). Pausing
// works the same way, with paused in place of refs.
//
// A gone group (evicted or forgotten) is dropped with its flag left set.
// So it never joins again, even if a task still enters it.
func (a *active[T]) sweepLocked() {
	kept := a.groups[:0]
	for _, g := range a.groups {
		switch {
		case g.gone():
		case !g.idle():
			kept = append(kept, g)
		default:
			g.listed.Store(false)
			if testHookSweepCleared != nil {
				testHookSweepCleared(g)
			}
			if !g.idle() && g.listed.CompareAndSwap(false, true) {
				kept = append(kept, g)
			}
		}
	}
	clear(a.groups[len(kept):]) // let the dropped groups be collected
	a.groups = kept
	a.kept = len(kept)
}

// testHookSweepCleared, if set, runs in sweepLocked just after it cleared
// g's listed flag. Tests set it to act as a task entering g there.
var testHookSweepCleared func(g any)

// idle reports whether g has no task that is not over and is not paused.
// A forgotten group's refs are negative, so it is idle too. The refs its
// remembered children hold are not its own tasks: a parent of idle
// children only is idle.
//
// Interleaving with a child made or let go: a child takes its ref before
// it counts it in kidRefs, and leaves kidRefs before it drops the ref. So
// refs less kidRefs at one instant never counts a task of g's as a
// child's. The two are read apart, so kidRefs is read before refs and
// after, and the fewer is taken off. A child that comes or goes between
// the reads then makes g look busier, never idle.
func (g *Group[T]) idle() bool {
	k := g.kin.Load()
	var kids int64
	if k != nil {
		kids = k.kidRefs.Load()
	}
	if testHookIdle != nil {
		testHookIdle()
	}
	n := g.refs.Load()
	if k != nil && n > 0 {
		n -= min(kids, k.kidRefs.Load())
	}
	return n <= 0 && !g.isPaused()
}

// testHookIdle, if set, runs in idle between its first two reads. Tests
// set it to make or let go of a child there.
var testHookIdle func()

// gone reports whether g was evicted or forgotten. Either cancels its
// current scope for good. A shutdown cancels a scope only once another has
// replaced it.
func (g *Group[T]) gone() bool { return g.scope.Load().cancelled() }

// RangeActive calls f for each group with a task not yet over, or paused,
// until f returns false. A task counts from Enter to Exit, so that is any
// group with a task running, waiting or in flight, or a caller blocked. It
// costs what is active, not every group the registry holds. It holds no
// lock while it calls f. A group may turn active or idle during the call,
// and then may or may not be seen.
func (r *Registry[T]) RangeActive(f func(g *Group[T]) bool) {
	gs := r.active.snapshot(nil)
	// A parent whose own refs are none is off the list, but its subtree's
	// tasks are its too: it is active while a descendant is listed.
	var seen map[*Group[T]]bool
	for _, g := range gs {
		if g.parent == nil {
			continue
		}
		if seen == nil {
			seen = make(map[*Group[T]]bool, len(gs))
			for _, g := range gs {
				seen[g] = true
			}
		}
		for a := g.parent; a != nil && !seen[a] && !a.gone(); a = a.parent {
			seen[a] = true
			gs = append(gs, a)
		}
	}
	for _, g := range gs {
		if !f(g) {
			return
		}
	}
}
