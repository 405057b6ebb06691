package groupstate

import (
	"sync"
	"sync/atomic"
)

// This file is about a group's family: its parent, its children, and the
// counts a group with either, or with extended tasks, keeps of them.

// kin is what a group with a parent, children or extended tasks keeps of
// them. It is made when the group is made with a parent, or for its first
// child or extended task. Most groups have none.
//
// The counts a task of the group or of its subtree writes as it starts and
// ends come first, on one cache line: kin is in the 192-byte size class,
// whose objects start on a line (TestKinCountsShareALine). With the
// counts over two lines, and a count of permits apart from run, a task of
// W2's tree with tenants of no limit (benchmarks module) took 3 % more CPU
// time, and BenchmarkFairLine's tree under IsolationOff 4 % more.
type kin[T any] struct {
	// extra is, under fair share, what extended tasks add to the count
	// Global.running reads for the group. running subtracts it back.
	extra atomic.Int64
	run   atomic.Int64 // the group's extended tasks running
	// over is the permits they hold at its concurrency limit beyond one
	// each. Most tasks cost one and leave it alone.
	over atomic.Int64
	// subCost is the permits its descendants' running tasks hold at its
	// concurrency limit.
	subCost atomic.Int64
	bulk    atomic.Int64 // its bulkhead's permits held beyond one per task, by its subtree's tasks
	// held is, under fair share, the permits of its parent's bulkhead and
	// concurrency layer held by its subtree's tasks (see kidQueue).
	held [2]atomic.Int64
	kids atomic.Bool
	// owed is set while the group, evicted with tasks not over, is still
	// counted in its parent. Its last task's end counts it out (leftParent).
	owed atomic.Bool

	// outcomes counts its descendants' tasks by how they ended (see
	// Group.CountOutcome).
	outcomes [NumOutcomes]atomic.Uint64

	mu       sync.Mutex
	children []*Group[T] // guarded by mu; those the registry holds
	closed   bool        // guarded by mu; evicted: adopts no more children
	at       int         // its index in its parent's children; guarded by the parent's mu
	// departed are children evicted while busy, guarded by mu. Their tasks
	// still hold the group's permits, so its stats count them until they
	// end (see Registry.Departed).
	departed []*Group[T]
	// buckets are its subtree's buckets in those layers' kidQueues, guarded
	// by the parent's line of each.
	buckets [2]*kidBucket[T]
	// kidRefs counts the refs of the group that its children remembered
	// hold, one each (see adopt and leaveParent). They keep the group
	// remembered, but they are not its own: a group whose refs are all
	// its children's is idle in the active list (see active.idle).
	kidRefs atomic.Int64
}

// family returns g's kin, making it on first use.
func (g *Group[T]) family() *kin[T] {
	if k := g.kin.Load(); k != nil {
		return k
	}
	g.kin.CompareAndSwap(nil, new(kin[T]))
	return g.kin.Load()
}

// adopt lists c, just made, among the children of k's group, and stores
// it in r. It reports false, and does neither, once k's group is evicted.
// The eviction's walk of the subtree takes k.mu too, so it finds c listed
// and stored, or closes k before c is listed: never c listed but not yet
// stored, which it could not remove.
func (k *kin[T]) adopt(c *Group[T], r *Registry[T]) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return false
	}
	c.kin.Load().at = len(k.children)
	k.children = append(k.children, c)
	// The ref the parent's group took for c is c's from here on. It was
	// counted in refs first (see Group.idle).
	k.kidRefs.Add(1)
	k.kids.Store(true)
	r.store(c)
	return true
}

// leaveParent takes g, forgotten or evicted, off its parent's children,
// and counts it out of the parent, which may be forgotten in turn. An
// evicted g whose tasks are not over is counted out as the last one ends,
// so that the parent stays active, and not idle, while they run.
func (g *Group[T]) leaveParent() {
	p := g.up()
	if p == nil {
		return
	}
	k := p.kin.Load()
	k.mu.Lock()
	i, last := g.kin.Load().at, len(k.children)-1
	k.children[i] = k.children[last]
	k.children[i].kin.Load().at = i
	k.children[last] = nil
	k.children = k.children[:last]
	k.departed = stillBusy(k.departed)
	if g.busy() { // evicted with tasks not over
		k.departed = append(k.departed, g)
	}
	k.mu.Unlock()
	// g's ref in p is no longer a child's: until it is counted out, which
	// for an evicted g waits for its last task, it is p's own, and keeps p
	// in the active list (see active.idle).
	k.kidRefs.Add(-1)
	if g.refs.Load() < 0 { // forgotten: idle since idleAt, and so is p's subtree
		p.exitSince(g.idleAt.Load())
		return
	}
	// Interleaving: owed is set before refs is read, and exit drops refs
	// before it reads owed. So either this sees g's last task over, or
	// that task's exit sees owed. Whoever clears owed counts g out of p.
	// A forget whose remove lost to this one may have marked g dead
	// meanwhile (refs < 0). No task will end in g then either.
	kg := g.kin.Load()
	kg.owed.Store(true)
	p.reg.active.join(p) // after kidRefs: see active.sweepLocked
	if g.refs.Load() <= 0 {
		g.leftParent()
	}
}

// leftParent counts g out of its parent if g is owed there (see
// leaveParent).
func (g *Group[T]) leftParent() {
	if k := g.kin.Load(); k.owed.Load() && k.owed.CompareAndSwap(true, false) {
		g.parent.exit()
	}
}

// stillBusy returns those of gs that are busy, in gs's array.
func stillBusy[T any](gs []*Group[T]) []*Group[T] {
	out := gs[:0]
	for _, g := range gs {
		if g.busy() {
			out = append(out, g)
		}
	}
	clear(gs[len(out):])
	return out
}

// up returns g's parent, or nil at the top.
func (g *Group[T]) up() *Group[T] { return g.parent }

// depth returns how many ancestors g has.
func (g *Group[T]) depth() uint8 { return g.levels }

// HasChildren reports whether a child of g was ever made.
func (g *Group[T]) HasChildren() bool { return g.hasKids() }

// hasKids reports whether a child of g was ever made.
func (g *Group[T]) hasKids() bool {
	k := g.kin.Load()
	return k != nil && k.kids.Load()
}

// ancestor returns g's ancestor at level lv (0 is g).
func (g *Group[T]) ancestor(lv uint8) *Group[T] {
	for ; lv > 0; lv-- {
		g = g.up()
	}
	return g
}

// Parent returns g's parent, or nil at the top.
func (g *Group[T]) Parent() *Group[T] { return g.up() }

// path returns the keys of g and its ancestors, nearest first.
func (g *Group[T]) path() []string {
	keys := make([]string, 0, 1+g.depth())
	for ; g != nil; g = g.up() {
		keys = append(keys, g.key)
	}
	return keys
}
