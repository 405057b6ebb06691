package groupstate

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
)

// Registry maps group keys to their state. Lookups of known groups take no
// lock, and Range never blocks them. It is safe for concurrent use.
type Registry[T any] struct {
	// Owner is the caller's, for its tasks to find (Permits.Owner). Set it
	// before any task enters.
	Owner any

	groups   sync.Map // string -> *Group[T]
	creating creations[T]
	count    atomic.Int64
	active   active[T] // the groups with a task, or paused
	root     root      // of every group's scope
	global   *Global[T]
	limits   atomic.Pointer[Limits]   // the last shared (see share)
	clock    func() int64             // the clock tasks are stamped with
	hot      atomic.Pointer[Group[T]] // a group Enter found lately (see Enter)

	// mu orders group creation (read side) with Update (write side), so
	// that no group is created with limits resolved from a replaced
	// function after Update has visited every group.
	mu      sync.RWMutex
	resolve func(key string) Limits // guarded by mu
	// parents returns a key's ancestors, nearest first. It is guarded by
	// mu, and nil when groups have no parents. tooDeep is the error for a
	// key whose parent's group, made under an earlier parents, has
	// MaxAncestors ancestors already.
	parents func(key string) ([]string, error)
	tooDeep func(key string, chain []string) error
	// cycle is the error for a key whose parent's group is being made
	// under it, under an earlier policy, given the keys from its parent
	// back to it. Guarded by mu.
	cycle  func(key string, chain []string) error
	tuneMu sync.Mutex // orders Tune's calls

	ttl       atomic.Int64 // idle groups are forgotten after ttl (clock units); 0: never
	lastSweep atomic.Int64 // when the last look of ForgetIdle began, stored as it ends
	sweepMu   sync.Mutex   // held by the ForgetIdle that looks
	removed   func(g *Group[T])
}

// SetRemoved makes f told of each group r forgets or evicts, once it is
// gone, so that what the caller keeps per group goes with it. Set it
// before any task enters.
func (r *Registry[T]) SetRemoved(f func(g *Group[T])) { r.removed = f }

// NewRegistry returns an empty registry. Its groups' scopes derive from
// parent, so cancelling parent cancels them all. Its tasks also take gl's
// permits. Its limits come from resolve, called once per group creation.
// Its idle times are read on clock.
func NewRegistry[T any](parent context.Context, gl *Global[T], resolve func(key string) Limits, clock func() int64) *Registry[T] {
	return &Registry[T]{root: root{ctx: parent}, global: gl, resolve: resolve, clock: clock}
}

// Enter ties p to the group for key, created on first use, and returns the
// group. p is the Permits of a new task owned by owner and submitted at the
// given time on r's clock. Enter counts the task in the group, so that the
// group is not forgotten as idle until p's Exit. Every task is counted,
// with or without an idle TTL. This is because a TTL turned on while a
// task is between Enter and its first permit must not forget its group.
//
// A new group's parent is made first, if it has one. The error is the
// parents function's, for a key whose ancestors cannot be resolved.
//
// The group found last for a key, sampled, is kept aside (hot), and Enter
// asks it first. A hit spares the map's lookup, 200 of the 2 400
// instructions of a Do on one group (BenchmarkDoUncontended). A miss costs
// a string comparison. The group kept is replaced on one miss in 16, on
// average, so that a stream of keys writes it seldom. A group gone (evicted
// or forgotten) is never entered from there: its scope says so, or its
// refs refuse the task.
func (r *Registry[T]) Enter(key string, p *Permits[T], owner *T, submitted int64) (*Group[T], error) {
	g := r.hot.Load()
	if g == nil || g.key != key || g.gone() || !g.enter() {
		var err error
		if g, err = r.get(key, nil); err != nil {
			return nil, err
		}
		if uint64(submitted)*0x9E3779B97F4A7C15>>60 == 0 && r.hot.Load() != g {
			r.hot.Store(g)
		}
	}
	p.init(g, owner, submitted)
	return g, nil
}

// SetParents makes parents the source of a new group's ancestors, nearest
// first, up to one r holds. A group's parent is fixed when it is made, so
// the chain above a group r holds is not resolved again. Call it before any
// task enters, or as part of a change of policy. tooDeep makes the error
// for a key whose parent's group has MaxAncestors ancestors, all kept
// from before, given the parent's key and theirs.
func (r *Registry[T]) SetParents(parents func(key string) ([]string, error), tooDeep func(key string, chain []string) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.parents, r.tooDeep = parents, tooDeep
}

// SetCycleError makes cycle the error for a key whose parent's group is
// being made under it (see creations), given the keys from its parent
// back to it.
func (r *Registry[T]) SetCycleError(cycle func(key string, chain []string) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cycle = cycle
}

// get returns the group for key, creating it on first use, with a task
// counted in it (see Group.enter). from is the creation of a group whose
// parent key's is, nil for none.
func (r *Registry[T]) get(key string, from *creation[T]) (*Group[T], error) {
	for {
		g, ok := r.Lookup(key)
		if !ok {
			r.mu.RLock()
			cycle := r.cycle
			r.mu.RUnlock()
			c := r.creating.do(key, from, r.create, cycle)
			if !c.returned {
				continue // its caller's goroutine ended in it: try here
			}
			if c.err != nil {
				return nil, c.err
			}
			g = c.g
		}
		if g.enter() {
			return g, nil
		}
		r.remove(g) // forgotten as idle, on its way out
	}
}

// remove deletes g, if it is still its key's group, counts it out and
// takes it off its parent's children. ForgetIdle, Evict and a Submit that
// finds g forgotten may all try. Whichever deletes it does the rest, so
// Len stays the number of groups Range yields, and g leaves its parent
// once. It reports whether it deleted g.
func (r *Registry[T]) remove(g *Group[T]) bool {
	if !r.groups.CompareAndDelete(g.key, g) {
		return false
	}
	r.hot.CompareAndSwap(g, nil)
	r.count.Add(-1)
	g.leaveParent()
	if r.removed != nil {
		r.removed(g)
	}
	return true
}

// descendants returns g's descendants that r holds, parents before their
// children.
func (r *Registry[T]) descendants(g *Group[T]) []*Group[T] { return r.subtree(g, walkHeld) }

// Departed returns g's children evicted while busy whose tasks, which
// hold g's permits, are not all over. g's stats count them.
func (r *Registry[T]) Departed(g *Group[T]) []*Group[T] {
	k := g.kin.Load()
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.departed = stillBusy(k.departed)
	return slices.Clone(k.departed)
}

// How subtree walks.
const (
	walkHeld    = iota // the descendants r holds
	walkClosing        // as walkHeld, closing each group to new children
	walkBusy           // as walkHeld, with each group's children evicted while busy (Departed)
)

// subtree is descendants, or, closing, descendants with g and each of its
// descendants adopting no child from then on, so that a child made as they
// are evicted is not left under them (see create).
func (r *Registry[T]) subtree(g *Group[T], walk int) []*Group[T] {
	out, _ := r.subtreeUpTo(g, walk, -1)
	return out
}

// subtreeUpTo is subtree, if it finds at most most groups (any, if most is
// negative). Else it returns false, having looked at no more than most.
func (r *Registry[T]) subtreeUpTo(g *Group[T], walk, most int) ([]*Group[T], bool) {
	var out []*Group[T]
	for i := -1; i < len(out); i++ {
		a := g
		if i >= 0 {
			a = out[i]
		}
		k := a.kin.Load()
		if walk == walkClosing {
			k = a.family()
		}
		if k == nil {
			continue
		}
		k.mu.Lock()
		k.closed = k.closed || walk == walkClosing
		if walk == walkBusy {
			k.departed = stillBusy(k.departed)
		}
		if most >= 0 && len(out)+len(k.children)+len(k.departed) > most {
			k.mu.Unlock()
			return nil, false
		}
		out = append(out, k.children...)
		if walk == walkBusy {
			out = append(out, k.departed...)
		}
		k.mu.Unlock()
	}
	return out, true
}

var errForgotten = errors.New("groupconc: idle group forgotten")

// share returns l to be stored as a group's limits. If l equals the limits
// stored last, it returns those, since limits are never changed once
// stored. So the groups of a policy that resolves them all alike share
// one. Limits with tuning are the group's own. It is called under mu,
// either side.
func (r *Registry[T]) share(l Limits) *Limits {
	if l.Tuning != nil {
		return &l
	}
	if p := r.limits.Load(); p != nil && *p == l {
		return p
	}
	p := &l
	r.limits.Store(p)
	return p
}

// Lookup returns the group for key if it exists.
func (r *Registry[T]) Lookup(key string) (*Group[T], bool) {
	v, ok := r.groups.Load(key)
	if !ok {
		return nil, false
	}
	return v.(*Group[T]), true
}

// SetIdleTTL has groups with no task for ttl (clock units) forgotten by
// ForgetIdle. A ttl of 0 never forgets. Groups idle when it is turned on
// count as idle from now: ForgetIdle first looks a TTL later. So their
// idle times, not kept while it was off, need not be stamped. A shorter
// ttl has the next ForgetIdle look. The last look kept groups idle for
// less than the old ttl, which may be twice the new one by now.
//
// It waits for a look under way, so that look cannot store its time over
// the change.
func (r *Registry[T]) SetIdleTTL(ttl int64) {
	r.sweepMu.Lock()
	defer r.sweepMu.Unlock()
	switch old := r.ttl.Load(); {
	case ttl > 0 && old <= 0:
		r.lastSweep.Store(r.clock())
	case ttl > 0 && ttl < old:
		r.lastSweep.Store(r.clock() - ttl)
	}
	r.ttl.Store(ttl)
}

// ForgetIdle forgets the groups that have had no task for the idle TTL, as
// Evict does. They have nothing to cancel. It looks at most once per TTL.
// So a group idle for twice the TTL is gone once any ForgetIdle returns.
// A parent goes in the same pass as its last child, if its subtree has
// had no task for the TTL.
//
// A look is stored as it ends. A call that finds one under way waits for
// it. So no call returns while groups it must forget remain.
func (r *Registry[T]) ForgetIdle() {
	ttl := r.ttl.Load()
	if ttl <= 0 {
		return
	}
	now := r.clock()
	if now-r.lastSweep.Load() < ttl {
		return
	}
	r.sweepMu.Lock()
	defer r.sweepMu.Unlock()
	// The last look ended and began after now-ttl. So it forgot every
	// group idle for twice the TTL at now. The TTL is read again, as
	// SetIdleTTL may have changed it meanwhile.
	if ttl = r.ttl.Load(); ttl <= 0 || now-r.lastSweep.Load() < ttl {
		return
	}
	now = r.clock()
	r.Range(func(g *Group[T]) bool {
		for g != nil && r.forget(g, now, ttl) {
			g = g.up() // idle now, if g was its last child
		}
		return true
	})
	r.lastSweep.Store(now)
}

// forget forgets g if it has had no task for ttl at now. It reports
// whether it did.
func (r *Registry[T]) forget(g *Group[T], now, ttl int64) bool {
	// idleAt is written before refs drops (see Group.exit), so a group
	// found with no task has its true idle time.
	if g.refs.Load() != 0 || now-g.idleAt.Load() < ttl || g.busy() || !g.refs.CompareAndSwap(0, deadRefs) {
		return false
	}
	r.remove(g)
	g.scope.Load().cancel(&forgotten)
	return true
}

// Len reports how many groups r holds.
func (r *Registry[T]) Len() int { return int(r.count.Load()) }

// Range calls f for each group until f returns false. It takes no lock.
func (r *Registry[T]) Range(f func(g *Group[T]) bool) {
	r.groups.Range(func(_, g any) bool { return f(g.(*Group[T])) })
}
