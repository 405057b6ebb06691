// Package groupstate holds the state a groupconc executor keeps per group
// and for the executor as a whole. That is each layer's permits and line of
// waiting tasks, and the queue-threshold slots that bound those lines. It
// is also the live counts behind the stats, each group's cancel scope, and
// the registry of groups. Permits walks one task through the layers.
//
// How a task waits is private to this package. Callers see Try, Resume,
// Handed, Leave and Release, and nothing of the lines behind them. A
// waiting task is a record in a line, owned by the line until it is taken
// out (see Permits). The package is generic in T, the caller's task type.
// So what it hands back is the caller's own *T.
package groupstate

import (
	"context"
	"math"
	"sync/atomic"
)

// Unlimited is the limit that means "no limit".
const Unlimited = math.MaxInt

// The reasons a walk ends Rejected. Each names the queue threshold that
// turned the task away. They are the root package's ReasonGlobalQueueFull
// and ReasonGroupQueueFull.
const (
	ReasonGlobalQueueFull = "global_queue_full"
	ReasonGroupQueueFull  = "group_queue_full"
)

// Limits are one group's resolved limits.
type Limits struct {
	Concurrency    int // >= 1
	MaxInFlight    int // >= 1
	QueueThreshold int // >= 0
	Weight         int // >= 1; counts only under fair share
	Answers        Answers
	Paused         bool // none of the group's tasks starts (see pause.go)
	// Tuning is the caller's adaptive state for the group's concurrency,
	// kept with the limits it moves (see Registry.Tune). It is nil if there
	// is none.
	Tuning any
}

// Group is one group's layers 2 and 3 and their shared queue threshold. It
// also holds its part of the global line under fair share, its live counts
// and its cancel scope. It is safe for concurrent use.
//
// A task keeps a pointer to the Group it was admitted by and releases into
// it, so a Group evicted from its registry stays valid for the tasks still
// holding its permits.
type Group[T any] struct {
	// These fields are read by every task and written seldom. They fill the
	// first cache line on 64-bit platforms. They are kept apart from the
	// counts below, which tasks write as they wait, start and end
	// (TestLayoutTable).
	key string
	// scope is the current generation of the group's cancel scope. It is the
	// parent of the contexts of the tasks submitted in it. At first it is
	// scope0, kept here so that a group never shut down allocates none.
	// Shutdown replaces it. Eviction replaces it with one cancelled for
	// good, which nothing replaces (see Shutdown).
	scope  atomic.Pointer[scope]
	scope0 scope
	limits atomic.Pointer[Limits]
	global *Global[T]
	paused atomic.Uint32 // pausedOn and drain states (pause.go)
	listed atomic.Bool   // in the registry's active list (see active.go)
	levels uint8         // its ancestors; fixed when it is made

	reg    *Registry[T]
	parent *Group[T] // fixed when it is made; nil at the top
	// fair is the group's part of the fair queue, under fair share only. An
	// idle group under IsolationOff does not carry it.
	fair *fairGroup[T]

	queue    slots[T] // its limit is read by every release (see Release)
	bulkhead line[T]
	conc     line[T]

	// refs counts the group's tasks not yet over (see Registry.Enter). Once
	// the group is forgotten, it holds deadRefs. idleAt is when a task last
	// ended, kept while idle groups are forgotten. Every task writes refs,
	// one of outcomes and conc's count (or bulkhead's). So they share one
	// cache line, and a task on another processor moves one line rather
	// than two (BenchmarkDoContended of the root package).
	refs     atomic.Int64
	outcomes [NumOutcomes]atomic.Uint64 // the group's tasks by how they ended (see CountOutcome)
	idleAt   atomic.Int64

	// waiting counts the tasks waiting at any layer. Those in the global
	// line are also chained in chain, in the order they were submitted
	// (see chainList.put). The chain is guarded by the global line's mu.
	waiting atomic.Int64
	blocked atomic.Int64 // callers waiting for a queue slot to submit to the group
	chain   chainList[T]

	pauseLine atomic.Pointer[line[T]]  // made on the first pause (see pause.go)
	kin       atomic.Pointer[kin[T]]   // its children and extended tasks (see kin.go); nil for most groups
	turns     atomic.Pointer[turns[T]] // see turn.go; nil until a task of the group is handed a permit
}

// chainList is a group's chain in the global line. It counts its tasks. So
// a snapshot reads how many wait for a global permit without the lock.
type chainList[T any] struct {
	list[T]
	n atomic.Int64 // written under the global line's mu
}

// put links w in where its age puts it (compareAge), so that the head is
// the group's oldest task in the line (oldestChained), in whatever order
// they joined. A resumed group's tasks join by priority, and a lowered
// limit puts tasks back at the head of the line. A new task joins last,
// after one comparison. One put back at the head (front) is placed from
// the head.
func (c *chainList[T]) put(w *Permits[T], front bool) {
	if front {
		c.placeFromHead(w, byGroup, olderThan[T])
	} else {
		at := c.tail
		for at != nil && compareAge(at, w) > 0 {
			at = at.chained.prev
		}
		c.linkAfter(w, at, byGroup)
	}
	c.n.Add(1)
}

func (c *chainList[T]) unlink(w *Permits[T], k int) {
	c.list.unlink(w, k)
	c.n.Add(-1)
}

// NumOutcomes is how many ways a task can end, for CountOutcome.
const NumOutcomes = 4

// CountOutcome counts one of the group's tasks as ended the i-th way
// (0 ≤ i < NumOutcomes), and counts it in each ancestor's subtree. The
// caller says which way is which.
func (g *Group[T]) CountOutcome(i int) {
	g.outcomes[i].Add(1)
	for a := g.up(); a != nil; a = a.up() {
		a.kin.Load().outcomes[i].Add(1) // a parent has its kin
	}
}

// Outcomes reports the tasks of the group and of its descendants by how
// they ended, as CountOutcome counted them. An ancestor keeps the counts of
// its descendants' tasks, so they stay when a descendant is forgotten or
// evicted.
func (g *Group[T]) Outcomes() (n [NumOutcomes]uint64) {
	k := g.kin.Load()
	for i := range n {
		n[i] = g.outcomes[i].Load()
		if k != nil {
			n[i] += k.outcomes[i].Load()
		}
	}
	return n
}

const deadRefs = math.MinInt64 / 2

func newGroup[T any](r *Registry[T], key string, l *Limits, parent *Group[T]) *Group[T] {
	g := &Group[T]{
		reg:    r,
		global: r.global,
		key:    key,
		parent: parent,
	}
	if parent != nil {
		g.levels = parent.levels + 1
		g.kin.Store(new(kin[T]))
	}
	g.bulkhead.init(l.MaxInFlight)
	g.conc.init(concLimit(*l))
	g.queue.init(l.QueueThreshold)
	if l.Paused {
		g.setPaused(true)
	}
	g.limits.Store(l)
	if r.global.fair {
		g.fair = newFairGroup(g, l.Weight)
	}
	g.scope0.init(&r.root)
	g.scope.Store(&g.scope0)
	return g
}

// Key returns the group key.
func (g *Group[T]) Key() string { return g.key }

// Limits returns the group's limits. They are those resolved when it was
// created, or by the last Registry.Update.
func (g *Group[T]) Limits() Limits { return *g.limits.Load() }

// Paused reports whether the group, or one of its ancestors, is paused.
func (g *Group[T]) Paused() bool { return g.PausedBy() != nil }

// PausedBy returns the nearest group on g's path that is paused, or nil.
func (g *Group[T]) PausedBy() *Group[T] { return g.waitsAt(pausedOnly, nil) }

// Scope returns the context that a new task of the group derives from. It
// is cancelled, with the cause given, by Shutdown and by the registry's
// Evict.
func (g *Group[T]) Scope() context.Context { return g.scope.Load() }

// Counts reports the group's running, waiting and in-flight tasks. Running
// tasks hold every permit. Tasks in flight are those past the bulkhead.
func (g *Group[T]) Counts() (running, waiting, inFlight int) {
	running = int(g.global.running(g))
	own, below := g.bulkhead.wholeOf(g) // permits, not tasks
	inFlight = int(g.bulkhead.held.load() - own - below)
	if k := g.kin.Load(); k != nil {
		inFlight -= int(k.bulk.Load())
	}
	return max(running, 0), max(int(g.waiting.Load()), 0), max(inFlight, 0)
}

// Held reports the permits held at the group's layers and the queue slots
// taken. All are 0 once the group's tasks have ended.
func (g *Group[T]) Held() (bulkhead, conc, slots int) {
	return int(g.bulkhead.held.load()), int(g.conc.held.load()), int(g.queue.load())
}

func appendOwners[T any](chain *Permits[T], out []*T) []*T {
	for w := chain; w != nil; {
		next := w.next
		w.next = nil
		out = append(out, w.task())
		w = next
	}
	return out
}

// enter counts a new task of the group, unless the group was forgotten.
func (g *Group[T]) enter() bool {
	for {
		n := g.refs.Load()
		if n < 0 {
			return false
		}
		if g.refs.CompareAndSwap(n, n+1) {
			// A group with children remembered has refs that are theirs
			// (kin.kidRefs), and leaves the list with only those. So the
			// flag is loaded for every task, not only on a 0→1 of refs.
			if !g.listed.Load() {
				g.reg.active.join(g) // after the add: see active.sweepLocked
			}
			return true
		}
	}
}

// busy reports whether a task of g holds a permit or waits, or g is
// paused.
func (g *Group[T]) busy() bool {
	return g.isPaused() || g.waiting.Load() != 0 || g.blocked.Load() != 0 || g.bulkhead.held.load() != 0 || g.conc.held.load() != 0 || g.global.running(g) != 0
}

// exit counts a task out of the group (see Registry.Enter).
func (g *Group[T]) exit() {
	if g.reg.ttl.Load() > 0 {
		g.idleAt.Store(g.reg.clock()) // before refs drops: see ForgetIdle
	}
	g.Unhold()
}

// Hold keeps g from being forgotten as idle until Unhold, as a task of it
// does, so that a change made to it is not lost with it. It reports false
// if g was forgotten or evicted already.
func (g *Group[T]) Hold() bool { return g.enter() }

// Unhold ends a Hold. Unlike a task's end, it does not restart g's idle
// time.
func (g *Group[T]) Unhold() {
	if g.refs.Add(-1) == 0 && g.parent != nil {
		g.leftParent() // evicted: see leaveParent
	}
}

// Touch restarts g's idle time, as a task's end does. An operator's change
// to g counts as a use of it. The caller holds g, so a sweep that finds g
// without a hold sees the new time.
func (g *Group[T]) Touch() { g.idleSince(g.reg.clock()) }

// exitSince counts a child forgotten as idle out of g. g's subtree has had
// no task since at, unless g's own tasks ended later.
func (g *Group[T]) exitSince(at int64) {
	g.idleSince(at)
	g.refs.Add(-1)
}

// idleSince makes at g's idle time, unless it is later already.
func (g *Group[T]) idleSince(at int64) {
	for old := g.idleAt.Load(); old < at && !g.idleAt.CompareAndSwap(old, at); old = g.idleAt.Load() {
	}
}

// oldestChained returns when the group's oldest task in the global line
// was submitted, or noWaiter. That task is the first chained. The caller
// holds the global line's mu.
func (g *Group[T]) oldestChained() int64 {
	if g.chain.head == nil {
		return noWaiter
	}
	return g.chain.head.submitted
}
