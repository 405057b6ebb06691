package groupstate

import (
	"math"
	"sync/atomic"
)

// Global is the executor-wide layer. It holds the global in-flight permits
// and the line of tasks waiting for one. It also holds the queue threshold
// bounding its waiters, and the executor-wide counts. It is safe for
// concurrent use.
//
// The isolation mode is decided here, in Global's methods and in the
// walk (walks). Under IsolationOff the global layer is taken first and its
// line is a globalFIFO. Under fair share it is taken last and its line is
// a fairQueue. A group's running tasks are then counted apart
// (fairGroup.running), as the fair order needs.
type Global[T any] struct {
	line      *line[T]
	fair      bool
	walk      *[3]walkStep // walks' entry for the mode
	runBit    uint8        // the layer a group's running count is read from (see running)
	queue     *slots[T]
	wake      func(*T)      // see SetHooks
	displaced func(v *T)    // see SetHooks
	stopped   func(*T) bool // see SetHooks
	extOf     func(*T) *Ext // see SetExt
	changes   changes       // see sendback.go

	// The fields above are written once and read by every task, extOf by
	// every step of an extended task. The counts below are written by every
	// task. The pad keeps them off one cache line wherever the Global is
	// placed. Without it, BenchmarkW2Tree's tasks with a parent (benchmarks
	// module) spent 5 to 7 % of their time reading extOf.
	_ [64]byte

	displacing atomic.Bool  // see SetDisplacing
	blocked    atomic.Int64 // callers waiting for a queue slot, all groups

	// Counts across all groups, so that Stats reads them without visiting
	// any group. Each is the difference of two sums that only grow. A task
	// that waits is counted in as waiting on the goroutine that submits it.
	// It is counted running, out of waiting and out of running on the one
	// that runs it. Padding the waiting sums onto cache lines of their own
	// measured no faster (BenchmarkFairLine, benchmarks/RESULTS.md). The
	// running count is in shards: every task, waiting or not, writes it.
	waitIn, waitOut atomic.Int64
	runs            *runCount

	watch watched[T] // queues nudged by a global permit (see WatchGlobal)
}

// NewGlobal returns the global layer with the given limit and queue
// threshold. fair chooses fair share.
func NewGlobal[T any](limit, queueThreshold int, fair bool) *Global[T] {
	gl := &Global[T]{queue: new(slots[T]), runs: new(runCount), fair: fair, walk: &walks[0], stopped: func(*T) bool { return false }}
	gl.queue.init(queueThreshold)
	gl.changes.at.Store(math.MinInt64)
	if fair {
		gl.walk = &walks[1]
		gl.line = newLine[T](limit, new(fairQueue[T]))
	} else {
		gl.line = newLine[T](limit, new(globalFIFO[T]))
	}
	gl.runBit = gl.walk[len(gl.walk)-1].bit // the last layer taken
	return gl
}

// Counts reports, across all groups (evicted ones too), the tasks running,
// waiting, and holding a global permit.
func (gl *Global[T]) Counts() (running, waiting, inFlight int) {
	return gl.runs.load(), count(&gl.waitIn, &gl.waitOut), int(max(gl.line.held.load(), 0))
}

// Held reports the global permits held and the global queue slots taken.
func (gl *Global[T]) Held() (inFlight, slots int) {
	return int(gl.line.held.load()), int(gl.queue.load())
}

// running returns g's running tasks. Under fair share that is its own
// count. Under IsolationOff it is its concurrency permits held, since that
// is the last layer taken.
//
// Extended tasks (ext.go) count themselves apart (kin.run), since a task
// may hold more than one permit and a parent's permits are held by its
// subtree's tasks. A group with a parent has only extended tasks. A group
// at the top may have plain ones too, whose count is the one above less
// what extended tasks add to it. Under fair share that is kept apart
// (kin.extra). Under IsolationOff the concurrency layer is the last taken,
// so it is what the group's own running extended tasks and its
// descendants' hold there (kin.run and kin.over, kin.subCost); the walk
// keeps no count of a layer for it.
func (gl *Global[T]) running(g *Group[T]) int64 {
	k := g.kin.Load()
	if g.parent != nil {
		return k.run.Load()
	}
	n := g.conc.held.load()
	if gl.fair {
		n = g.fair.running.Load()
	} else if own, below := g.conc.wholeOf(g); own+below != 0 {
		n -= own + below // raised, not taken (whole.go)
	}
	switch {
	case k == nil:
	case gl.fair:
		n += k.run.Load() - k.extra.Load()
	default:
		n -= k.over.Load() + k.subCost.Load()
	}
	return n
}

// counted keeps the counts of group a right, as a task of Ext x takes
// (sign 1) or gives back (-1) a's layer bit at level lv of its path.
// Under fair share a group at the top keeps what extended tasks add to
// the count Global.running reads (kin.extra). Every group keeps the
// bulkhead permits held beyond one per task (kin.bulk), so that its tasks
// in flight are counted as tasks.
func (gl *Global[T]) counted(x *Ext, a *Group[T], bit, lv uint8, sign int64) {
	if gl.counts(x, a, bit) {
		gl.count(x, a, bit, lv, sign)
	}
}

// counts reports whether counted has a count to keep. Most layers keep
// none.
func (gl *Global[T]) counts(x *Ext, a *Group[T], bit uint8) bool {
	return bit == gl.runBit && gl.fair && a.parent == nil || bit == heldBulkhead && x.amt != nil
}

// countLayer keeps every count right as a task of group g, of Ext x,
// takes (sign 1) or gives back (-1) ancestor a's layer bit at level lv:
// a's own counts (counted), and its child's share of it (kidHeld).
func (gl *Global[T]) countLayer(g *Group[T], x *Ext, a *Group[T], bit, lv uint8, sign int64) {
	gl.counted(x, a, bit, lv, sign)
	if lv > 0 {
		gl.kidHeld(g, x, bit, lv, sign)
	}
}

func (gl *Global[T]) count(x *Ext, a *Group[T], bit, lv uint8, sign int64) {
	k := a.kin.Load() // family, but with no call where kin is made
	if k == nil {
		k = a.family()
	}
	if bit == gl.runBit {
		k.extra.Add(sign * x.amount(bit, lv))
	} else if n := x.amount(bit, lv) - 1; n != 0 {
		k.bulk.Add(sign * n)
	}
}

// started counts a task of g running that took a global permit without
// being handed one, under fair share. A task handed one is counted by
// fairQueue.pop.
func (gl *Global[T]) started(p *Permits[T]) {
	g := p.group
	p.runFair()
	if gl.line.waiting.Load() != 0 {
		r := gl.line.lock()
		r.disc.(*fairQueue[T]).fix(g)
		r.unlock()
	}
}

// toTree makes the fair line choose top-down (fairtree.go), as a group
// gets its first child. A group's own running count leaves out its
// subtree's, so the flat choice would not see what a parent's children
// hold. The line stays so.
func (gl *Global[T]) toTree() {
	r := gl.line.lock()
	defer r.unlock()
	if q := r.disc.(*fairQueue[T]); !q.tree {
		q.toTree()
	}
}

// setWeight changes g's weight, and its place in the fair order.
func (gl *Global[T]) setWeight(g *Group[T], w int) {
	if !gl.fair {
		return
	}
	r := gl.line.lock()
	defer r.unlock()
	g.fair.weight.Store(int64(w))
	r.disc.(*fairQueue[T]).fix(g)
}

// walkStep is one limit of the walk, as an isolation mode orders it: its
// permit (a bit of Permits.held), the queue slot a task waiting there holds,
// and whether release gives back that slot just before the permit. A full
// queue turns the task away with that queue's reason (reasonOf). The
// layer's line and queue are the group's or the global ones (lineOf,
// queueOf).
type walkStep struct {
	bit, slot uint8
	drop      bool
}

// top returns the highest level of a path depth ancestors deep that the
// step takes a layer of: each ancestor's, or only the task's own group's
// for the global layer.
func (y *walkStep) top(depth uint8) uint8 {
	if y.bit == heldGlobal {
		return 0
	}
	return depth
}

// walks is the one description of the walk in each isolation mode.
// Permits.advance takes the layers in this order, and Permits.release
// gives them back in reverse. Lowering a limit, pausing and finding a
// victim read it too (Global.layers).
//
//	mode   layer        queue slot  slot given back
//	off    global       global      before the global permit
//	       bulkhead     group       before the bulkhead permit
//	       concurrency  group
//	fair   bulkhead     group
//	       concurrency  group       before the concurrency permit
//	       global       group
//
// Under fair share the global layer comes last, so a group's share counts
// only tasks its own limits let through. Its line is the fair queue. A
// group's layer is taken at the task's group, then at each ancestor,
// nearest first (top). A task waiting at an ancestor's layer holds a slot
// of that ancestor's queue, and only while it waits there. Past a full
// queue's threshold it keeps the ancestor slot it held before, too (see
// Permits.wait).
var walks = [2][3]walkStep{
	{{heldGlobal, heldGlobalSlot, true}, {heldBulkhead, heldGroupSlot, true}, {heldConc, heldGroupSlot, false}},
	{{heldBulkhead, heldGroupSlot, false}, {heldConc, heldGroupSlot, true}, {heldGlobal, heldGroupSlot, false}},
}

// lineOf returns the line of g's layer bit.
func (g *Group[T]) lineOf(bit uint8) *line[T] {
	switch bit {
	case heldGlobal:
		return g.global.line
	case heldBulkhead:
		return &g.bulkhead
	}
	return &g.conc
}

// queueOf returns the queue whose slot is bit, g's or the global one.
func (g *Group[T]) queueOf(slot uint8) *slots[T] {
	if slot == heldGlobalSlot {
		return g.global.queue
	}
	return &g.queue
}

// reasonOf is why a task is turned away when the queue of slot is full.
func reasonOf(slot uint8) string {
	if slot == heldGlobalSlot {
		return ReasonGlobalQueueFull
	}
	return ReasonGroupQueueFull
}

// layer is one limit of g's walk, with its line.
type layer[T any] struct {
	l         *line[T]
	bit, slot uint8
}

// layers returns the layers a task of g walks through, in order.
func (gl *Global[T]) layers(g *Group[T]) [3]layer[T] {
	var ys [3]layer[T]
	for i, y := range gl.walk {
		ys[i] = layer[T]{g.lineOf(y.bit), y.bit, y.slot}
	}
	return ys
}

// tookGlobal follows up on p, which just took its global permit. Under
// IsolationOff it gives back its global queue slot, since nothing waits
// after the global layer for it. Under fair share the group counts one
// more running, unless the fair queue counted it as it handed the permit.
func (gl *Global[T]) tookGlobal(p *Permits[T], handed bool) {
	switch {
	case !gl.fair:
		p.dropSlot(gl.queue, heldGlobalSlot)
	case !handed:
		gl.started(p)
	}
}

// giveGlobal gives back p's global permit, which p holds. x is p's Ext,
// nil for a plain task. Under fair share the group counts one less running
// first (see releaseFair). Under IsolationOff a global queue of no slots
// nudges its first blocked caller (see slots.nudge), whose task may start
// now.
func (gl *Global[T]) giveGlobal(p *Permits[T], x *Ext) {
	if gl.fair {
		runFair(p.group, -x.amount(heldGlobal, 0))
		if x != nil {
			gl.counted(x, p.group, heldGlobal, 0, -1)
		}
		p.releaseFair()
		return
	}
	p.releaseLine(gl.line, heldGlobal, x)
	p.nudge(gl.queue, heldGlobal)
}

// pathStep is one layer of the walk of a task of some group: its line, its
// permit bit, and the level of the group the layer is of (0: the task's
// own group, 1: its parent, and so on).
type pathStep[T any] struct {
	l       *line[T]
	bit, lv uint8
}

// after returns the layers a task of g walks through after the one of bit
// at level lv, in order, its ancestors' included. A bit of 0 gives them
// all.
func (gl *Global[T]) after(g *Group[T], bit, lv uint8) []pathStep[T] {
	var out []pathStep[T]
	found := bit == 0
	for i := range gl.walk {
		y := &gl.walk[i]
		for l := uint8(0); l <= y.top(g.depth()); l++ {
			if found {
				out = append(out, pathStep[T]{g.ancestor(l).lineOf(y.bit), y.bit, l})
			}
			found = found || y.bit == bit && l == lv
		}
	}
	return out
}

// count returns the count kept as the sums in and out. It reads in first.
// So the result is at most the count as out was read, and it is exact
// once tasks are still. A difference made negative by a task that came and
// went between the two reads reads as 0.
func count(in, out *atomic.Int64) int {
	n := in.Load()
	n -= out.Load()
	return int(max(n, 0))
}
