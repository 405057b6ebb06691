package groupstate

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// A task costs one permit at every layer, and its group has no parent,
// unless it is extended. An extended task carries an Ext, kept by its
// owner beside the task (see Global.SetExt). Permits has no room for it,
// and most tasks need none.

// MaxAncestors bounds how many ancestors a group may have.
const MaxAncestors = 8

// Ext is the part of a task's walk that only a task of cost above one, or
// of a group with a parent, needs. Its zero value is ready for Extend.
//
// It is kept to 32 bytes, so that a handle made with room for it fits the
// 192-byte size class (see withExt in the root package). At 224 bytes a
// task of W2's tree (benchmarks module) took 5 % more CPU time.
type Ext struct {
	level uint8 // the ancestor level of the layer it waits at; 0 is its group
	above uint8 // the level of the ancestor whose queue turned the last walk away; 0: none
	// unparked is 0 until a resume takes the task out of a pause line.
	// Then it is 1 plus the level of the group whose line that was (see
	// gate). A full ancestor's queue does not turn such a task away (see
	// keepSlot).
	unparked uint8
	// ticket orders the task among those that waited, under fair share
	// (see Permits.waited).
	ticket uint32
	// seen is that queue's nudges before the walk tried its permit (see
	// Block).
	seen uint64
	// anc holds the bits of Permits.held for each ancestor's layers, the
	// parent's first. Only heldBulkhead, heldConc and heldGroupSlot occur.
	anc [MaxAncestors]uint8
	// amt is made only for a cost above one. A task without it costs one.
	amt *costly
}

// costly is what a task of cost above one keeps: its cost, and what it
// took at each layer (see index). A cost above a limit takes the whole
// limit there.
type costly struct {
	cost int64
	took [3 + 2*MaxAncestors]int64
}

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
}

// Extend makes p an extended task of cost c (at least 1),
// with e its Ext. Call it after Registry.Enter and before the first Try.
// The Global's ext hook must return e for p's task from then on.
func (p *Permits[T]) Extend(e *Ext, c int) {
	if c > 1 {
		e.amt = &costly{cost: int64(c)}
		if p.group.global.fair {
			p.group.family() // its group's later tasks are extended too (NeedsExt)
		}
	}
	p.flags |= extended
}

// NeedsExt reports whether a task of cost c entered as p must be extended.
// Under fair share so is a task of a group with children, or one that had
// a costly task. Only an Ext keeps its ticket there (see waited), which
// tells it apart from the extended tasks submitted at the same clock
// reading before it.
func (p *Permits[T]) NeedsExt(c int) bool {
	g := p.group
	return c > 1 || g.parent != nil || g.global.fair && g.kin.Load() != nil
}

// ext returns p's Ext. p is extended.
func (p *Permits[T]) ext() *Ext { return p.group.global.extOf(p.task()) }

// index returns the slot of amt for the layer bit at level lv.
func index(bit uint8, lv uint8) int {
	switch {
	case bit == heldGlobal:
		return 2
	case lv == 0 && bit == heldBulkhead:
		return 0
	case lv == 0:
		return 1
	case bit == heldBulkhead:
		return 1 + 2*int(lv)
	}
	return 2 + 2*int(lv)
}

// x returns p's Ext, or nil for a plain task. The walk fetches it once
// and hands it on, since fetching it calls the Global's hook.
func (p *Permits[T]) x() *Ext {
	if p.flags&extended == 0 {
		return nil
	}
	return p.extNow()
}

// extNow is ext, kept out of line so that x inlines.
//
//go:noinline
func (p *Permits[T]) extNow() *Ext { return p.ext() }

// took records that the task took n permits at the layer bit at level lv.
func (x *Ext) took(bit, lv uint8, n int64) {
	if x != nil && x.amt != nil {
		x.amt.took[index(bit, lv)] = n
	}
}

// amount returns the permits the task holds at the layer bit at level lv.
func (x *Ext) amount(bit, lv uint8) int64 {
	if x == nil || x.amt == nil {
		return 1
	}
	return max(x.amt.took[index(bit, lv)], 1)
}

// slotAbove reports whether the task holds a slot of an ancestor's queue.
// It reads anc's bits as one word.
func (x *Ext) slotAbove() bool {
	return binary.LittleEndian.Uint64(x.anc[:])&ancSlots != 0
}

// ancSlots is heldGroupSlot in each byte of a word.
const ancSlots = 0x0101010101010101 * uint64(heldGroupSlot)

// anc is one word: slotAbove reads it so.
var _ = [1]struct{}{}[MaxAncestors-8]

// costsOne reports whether the task costs one (nil: plain).
func (x *Ext) costsOne() bool { return x == nil || x.amt == nil }

// lvl returns the level of the layer the task waits at.
func (x *Ext) lvl() uint8 {
	if x == nil {
		return 0
	}
	return x.level
}

// amount returns the permits p holds at the layer bit at level lv.
func (p *Permits[T]) amount(bit, lv uint8) int64 {
	if p.flags&extended == 0 {
		return 1
	}
	return p.amountExt(bit, lv)
}

// amountExt is amount for an extended task, kept out of line so that
// amount inlines.
//
//go:noinline
func (p *Permits[T]) amountExt(bit, lv uint8) int64 { return p.ext().amount(bit, lv) }

// waitLevel returns the level of the layer p waits at.
func (p *Permits[T]) waitLevel() uint8 { return p.x().lvl() }

// heldAt returns the held bits of p at level lv.
func (p *Permits[T]) heldAt(lv uint8) *uint8 {
	if lv == 0 {
		return &p.held
	}
	return &p.ext().anc[lv-1]
}

// countRunning counts the extended task p, of Ext x, in (sign 1) or out
// (-1) of its group's running tasks and running cost, and of its
// ancestors' running cost.
func (p *Permits[T]) countRunning(x *Ext, sign int64) {
	k := p.group.kin.Load() // family, but with no call where kin is made
	if k == nil {
		k = p.group.family()
	}
	k.run.Add(sign)
	if x.amt == nil { // a cost of one: one permit at each level
		for a := p.group.up(); a != nil; a = a.up() {
			a.kin.Load().subCost.Add(sign) // a parent has its kin
		}
		return
	}
	k.over.Add(sign * (x.amount(heldConc, 0) - 1))
	lv := uint8(1)
	for a := p.group.up(); a != nil; a, lv = a.up(), lv+1 {
		a.kin.Load().subCost.Add(sign * x.amount(heldConc, lv))
	}
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
