// Package groupstate holds the state a groupconc executor keeps per group and
// for the executor as a whole: the layer semaphores, the queue-threshold
// semaphores that bound their waiters, the live counts behind the stats, and
// each group's cancel scope. Permits walks one task through the layers.
//
// How a task waits for a permit is private to this package: callers see
// Try, Resume, Handed, Leave and Release, and nothing of the semaphores and
// lines behind them. A waiting task is a record in a line, owned by the line
// until it is taken out (see Permits).
package groupstate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// Unlimited is the limit that means "no limit": no semaphore is created for it.
const Unlimited = math.MaxInt

// The reasons a walk ends Rejected: which queue threshold turned the task away.
const (
	ReasonGlobalQueueFull = "global_queue_full"
	ReasonGroupQueueFull  = "group_queue_full"
)

// Limits are one group's resolved limits.
type Limits struct {
	Concurrency    int // >= 1
	MaxInFlight    int // >= 1
	QueueThreshold int // >= 0
}

// Global is the executor-wide layer 1: the global in-flight semaphore and the
// queue threshold bounding its waiters. It is safe for concurrent use.
type Global struct {
	sem        *line               // nil when the limit is Unlimited
	queue      *semaphore.Weighted // nil when waiting is unbounded
	limit      int
	queueLimit int

	// Executor-wide counts, so that Stats reads them without visiting any
	// group. Each is the difference of two sums that only grow, kept on
	// cache lines of their own: a task is usually counted in on the
	// goroutine that submits it and out on the one that runs it, so
	// neither line is written from both sides (see count).
	_   [64]byte
	in  globalCounts
	_   [64]byte
	out globalCounts
}

// globalCounts is one side, in or out, of Global's counts. A task updates
// them at the same moments, so they share a cache line.
type globalCounts struct {
	inFlight atomic.Int64 // tasks past layer 1
	running  atomic.Int64 // tasks holding a concurrency permit, all groups
	waiting  atomic.Int64 // tasks that joined a line and have no concurrency permit yet
}

// NewGlobal returns layer 1 with the given limit and queue threshold.
func NewGlobal(maxInFlight, queueThreshold int) *Global {
	return &Global{
		sem:        newLine(maxInFlight),
		queue:      newSem(queueThreshold),
		limit:      maxInFlight,
		queueLimit: queueThreshold,
	}
}

// Counts reports, across all groups (evicted ones too), the tasks running,
// waiting, and holding a global permit (counted even when the limit is
// Unlimited).
func (gl *Global) Counts() (running, waiting, inFlight int) {
	return count(&gl.in.running, &gl.out.running), count(&gl.in.waiting, &gl.out.waiting), count(&gl.in.inFlight, &gl.out.inFlight)
}

// count returns the count kept as the sums in and out. It reads in first:
// then the result is at most the count as out was read, so it never
// exceeds the count's limit, and it is exact once tasks are still. Read
// while tasks move, it may miss a task that came and went between the two
// reads, and a difference made negative that way reads as 0.
func count(in, out *atomic.Int64) int {
	n := in.Load()
	n -= out.Load()
	return int(max(n, 0))
}

// Group is one group's layers 2 and 3, their shared queue threshold, its live
// counts and its cancel scope. It is safe for concurrent use.
//
// A task keeps a pointer to the Group it was admitted by and releases into it,
// so a Group evicted from its registry stays valid for the tasks still
// holding its permits.
type Group struct {
	key      string
	limits   Limits
	bulkhead *line               // nil when MaxInFlight is Unlimited
	conc     *line               // nil when Concurrency is Unlimited
	queue    *semaphore.Weighted // nil when QueueThreshold is Unlimited
	global   *Global             // layer 1, whose line holds the group's tasks too

	// scope is the parent of the contexts of the group's tasks. ShutdownGroup
	// cancels it and installs a fresh one; eviction cancels it for good.
	// Stores happen under mu so that a shutdown never revives an evicted group.
	scope   atomic.Pointer[scope]
	parent  context.Context // the executor's context, parent of every scope
	mu      sync.Mutex
	evicted bool // guarded by mu

	// The counts change with every task: keep them off the cache line of
	// the fields every Submit reads. Each is kept as two sums, in and out,
	// on lines of their own, as Global's are.
	_   [64]byte
	in  groupCounts
	_   [64]byte
	out groupCounts
}

// groupCounts is one side, in or out, of Group's counts. A task admitted
// inside Submit touches only running; the others are kept by tasks that
// wait, so the common path pays for one count.
type groupCounts struct {
	running     atomic.Int64 // tasks holding a concurrency permit
	waiting     atomic.Int64 // tasks that joined a line and have no concurrency permit yet
	waitingConc atomic.Int64 // tasks holding the bulkhead, in the concurrency line
}

type scope struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

func newScope(parent context.Context) *scope {
	ctx, cancel := context.WithCancelCause(parent)
	return &scope{ctx: ctx, cancel: cancel}
}

func newGroup(parent context.Context, gl *Global, key string, l Limits) *Group {
	g := &Group{
		global:   gl,
		key:      key,
		limits:   l,
		bulkhead: newLine(l.MaxInFlight),
		conc:     newLine(l.Concurrency),
		queue:    newSem(l.QueueThreshold),
		parent:   parent,
	}
	g.scope.Store(newScope(parent))
	return g
}

// Key returns the group key.
func (g *Group) Key() string { return g.key }

// Limits returns the limits resolved when the group was created.
func (g *Group) Limits() Limits { return g.limits }

// Scope returns the context that a new task of the group derives from. It is
// cancelled, with the cause given, by Shutdown and by the registry's Evict.
func (g *Group) Scope() context.Context { return g.scope.Load().ctx }

// Counts reports the group's running, waiting and in-flight tasks. In flight
// are the tasks past the bulkhead: running, or waiting for concurrency.
func (g *Group) Counts() (running, waiting, inFlight int) {
	running = count(&g.in.running, &g.out.running)
	return running, count(&g.in.waiting, &g.out.waiting), running + count(&g.in.waitingConc, &g.out.waitingConc)
}

// Shutdown cancels every task of the group with cause, takes its waiting
// tasks out of their lines and gives later tasks a fresh scope. The tasks
// taken out are returned: the caller owns them now, and ends them. Shutdown
// does nothing to an evicted group, whose scope is already cancelled for
// good.
func (g *Group) Shutdown(cause error) []*Permits {
	g.mu.Lock()
	if g.evicted {
		g.mu.Unlock()
		return nil
	}
	old := g.scope.Swap(newScope(g.parent))
	g.mu.Unlock()
	old.cancel(cause)
	return g.sweep(func(p *Permits) bool { return p.group == g && p.scope == old })
}

func (g *Group) evict(cause error) []*Permits {
	g.mu.Lock()
	g.evicted = true
	g.mu.Unlock()
	g.scope.Load().cancel(cause)
	return g.sweep(func(p *Permits) bool { return p.group == g })
}

// sweep takes the waiting tasks that match out of the group's lines and the
// global one. It runs after their scope was cancelled: a task that joins a
// line meanwhile sees that when it looks after joining, and leaves.
func (g *Group) sweep(match func(p *Permits) bool) []*Permits {
	out := g.global.sem.sweep(match, nil)
	out = g.bulkhead.sweep(match, out)
	return g.conc.sweep(match, out)
}

// Registry maps group keys to their state. Lookups of known groups take no
// lock, and Range never blocks them. It is safe for concurrent use.
type Registry struct {
	groups  sync.Map // string -> *Group
	count   atomic.Int64
	parent  context.Context
	global  *Global
	resolve func(key string) Limits
}

// NewRegistry returns an empty registry whose groups' scopes derive from
// parent, whose tasks take gl's permits first, and whose limits come from
// resolve, called once per group creation.
func NewRegistry(parent context.Context, gl *Global, resolve func(key string) Limits) *Registry {
	return &Registry{parent: parent, global: gl, resolve: resolve}
}

// Get returns the group for key, creating it on first use. When two callers
// create the same group at once one state wins and both get it: limits are
// those of the first resolution stored.
func (r *Registry) Get(key string) *Group {
	if g, ok := r.groups.Load(key); ok {
		return g.(*Group)
	}
	g := newGroup(r.parent, r.global, key, r.resolve(key))
	if other, loaded := r.groups.LoadOrStore(key, g); loaded {
		g.scope.Load().cancel(errLostRace) // detach the unused scope from parent
		return other.(*Group)
	}
	r.count.Add(1)
	return g
}

var errLostRace = errors.New("groupconc: duplicate group state discarded")

// Lookup returns the group for key if it exists.
func (r *Registry) Lookup(key string) (*Group, bool) {
	g, ok := r.groups.Load(key)
	if !ok {
		return nil, false
	}
	return g.(*Group), true
}

// Evict forgets the group for key, cancels its tasks with cause and takes its
// waiting tasks out of their lines; those are returned, and the caller owns
// them now. Tasks still holding its permits release them into it; the next
// Get creates a new group with freshly resolved limits.
func (r *Registry) Evict(key string, cause error) []*Permits {
	g, ok := r.groups.LoadAndDelete(key)
	if !ok {
		return nil
	}
	r.count.Add(-1)
	return g.(*Group).evict(cause)
}

// SweepAll takes every waiting task out of the global line and the lines of
// every group r holds, and returns them: the caller owns them now. Call it
// once every task has been cancelled; a task that joins a line meanwhile
// sees that when it looks after joining, and leaves.
func (r *Registry) SweepAll() []*Permits {
	out := r.global.sem.sweep(nil, nil)
	r.Range(func(g *Group) bool {
		out = g.bulkhead.sweep(nil, out)
		out = g.conc.sweep(nil, out)
		return true
	})
	return out
}

// Len reports how many groups r holds.
func (r *Registry) Len() int { return int(r.count.Load()) }

// Range calls f for each group until f returns false. It takes no lock.
func (r *Registry) Range(f func(g *Group) bool) {
	r.groups.Range(func(_, g any) bool { return f(g.(*Group)) })
}

// Outcome is the state a task reaches in its walk through the layers.
type Outcome uint8

const (
	Admitted Outcome = iota + 1 // the task holds every permit
	MustWait                    // the task holds a queue slot and a place in line; the line owns it now
	Rejected                    // no queue slot; the task holds nothing
)

// Bits of Permits.held.
const (
	heldGlobal      uint8 = 1 << iota // layer 1 (also set when it is Unlimited)
	heldGlobalSlot                    // a place in the global queue
	heldBulkhead                      // layer 2 (also set when it is Unlimited)
	heldGroupSlot                     // a place in the group queue, kept from layer 2 to 3
	heldConc                          // layer 3 (also set when it is Unlimited)
	countedWaiting                    // counted in Group.waiting
	countedConcWait                   // counted in Group.waitingConc
)

// Permits is what one task holds, and its place in line while it waits.
//
// A Permits has one owner at a time, and only the owner may call its methods
// (but Leave, Key and Scope, which anyone may call). The goroutine that
// Inits it owns it until Try or Resume returns MustWait: the task is then in
// a line, and the line owns it. It is taken out again, and owned from then on, by whoever
// releases the permit it waits for (Handed returns it to that releaser,
// which calls Resume), or by whoever makes it leave (Leave, Sweep).
type Permits struct {
	group   *Group  // and through it the global layer; never changes after Init
	scope   *scope  // never changes after Init
	owner   any     // the task, for whoever takes it out of a line
	held    uint8   // bits above
	granted uint8   // the layer bit handed over with the task, until Resume takes it
	w       waiter  // the task's place in the line it waits in, if any
	handed  *waiter // waiters handed a permit by this task's releases, chained by next
}

// Init ties p to the layers of group g (its own and the global one) and to
// the task that owns it, and fixes the group scope the task belongs to.
func (p *Permits) Init(g *Group, owner any) {
	p.group, p.held, p.owner = g, 0, owner
	p.scope = g.scope.Load()
	p.w.owner = p
}

// Owner returns the owner given to Init.
func (p *Permits) Owner() any { return p.owner }

// Key returns the key of the group given to Init. Safe from any goroutine,
// as Scope is: neither reads anything that changes after Init.
func (p *Permits) Key() string { return p.group.key }

// Scope returns the context of the group scope the task was submitted in. It
// is cancelled, with the cause given, by the group's Shutdown and by the
// registry's Evict. Safe from any goroutine.
func (p *Permits) Scope() context.Context { return p.scope.ctx }

// Try walks the layers without blocking. It returns Admitted, MustWait (the
// task holds a queue slot and a place in line at the layer it must wait at,
// and belongs to that line now) or Rejected with a reason naming the
// threshold that turned it away. A rejected task may have released permits
// that others waited for: see Handed.
func (p *Permits) Try() (Outcome, string) {
	return p.advance()
}

// Resume carries on the walk of a task taken out of its line by Handed,
// holding the permit it waited for. It returns as Try does.
func (p *Permits) Resume() (Outcome, string) {
	p.granted = p.w.bit
	return p.advance()
}

// Leave takes the task out of the line it waits in and reports whether it
// did so; if so the caller owns the task, which holds no permit of that line
// (but may hold permits of earlier layers: Release them). It reports false
// if the task is in no line: whoever owns it will see why it should leave
// (its cancellation) when next it looks. Safe from any goroutine.
func (p *Permits) Leave() bool { return p.w.leave() }

// Handed returns, one at a time, the tasks that this task's releases handed
// a permit to, or nil when there are none left. Each returned task is taken
// out of its line and owned by the caller, who must call its Resume.
func (p *Permits) Handed() *Permits {
	w := p.handed
	if w == nil {
		return nil
	}
	p.handed, w.next = w.next, nil
	return w.owner
}

// Adopt moves the tasks q's releases handed a permit to over to p, whose
// Handed then returns them too. The caller must own both.
func (p *Permits) Adopt(q *Permits) {
	for w := q.handed; w != nil; {
		next := w.next
		w.next = p.handed
		p.handed = w
		w = next
	}
	q.handed = nil
}

// advance acquires the layers in their fixed order, global → bulkhead →
// concurrency, without blocking. A layer is first tried as is; only a task
// that has to wait takes a queue slot and joins the layer's line, and then
// the walk stops there.
func (p *Permits) advance() (Outcome, string) {
	g := p.group
	gl := g.global
	if p.held&heldGlobal == 0 {
		out := p.layer(gl.sem, gl.queue, heldGlobal, heldGlobalSlot)
		if out != Admitted {
			return p.stop(out, ReasonGlobalQueueFull)
		}
		gl.in.inFlight.Add(1)
		p.dropSlot(gl.queue, heldGlobalSlot)
	}
	if p.held&heldBulkhead == 0 {
		out := p.layer(g.bulkhead, g.queue, heldBulkhead, heldGroupSlot)
		if out != Admitted {
			return p.stop(out, ReasonGroupQueueFull)
		}
		// A slot taken here is kept until the concurrency permit is held, so
		// the task is not turned away between the two layers.
	}
	out := p.layer(g.conc, g.queue, heldConc, heldGroupSlot)
	if out != Admitted {
		return p.stop(out, ReasonGroupQueueFull)
	}
	// Count the task running before anyone can see its permit as free again.
	g.in.running.Add(1)
	gl.in.running.Add(1)
	p.uncount()
	p.dropSlot(g.queue, heldGroupSlot)
	return Admitted, ""
}

// layer takes one layer: the permit handed over, or one free at once, or a
// queue slot and a place in the layer's line. A nil line is an Unlimited
// layer and costs nothing. A nil queue admits any number of waiters; its slot
// bit is still set, so a task is counted against the group threshold once
// from layer 2 to layer 3.
func (p *Permits) layer(l *line, queue *semaphore.Weighted, bit, slot uint8) Outcome {
	if p.granted == bit {
		p.granted = 0
		p.held |= bit
		return Admitted
	}
	if l == nil || l.tryAcquire() {
		p.held |= bit
		return Admitted
	}
	if p.held&slot == 0 {
		// TryAcquire never blocks, and nobody waits on a queue
		// semaphore, so this is an exact "is a slot free" check.
		if queue != nil && !queue.TryAcquire(1) {
			return Rejected
		}
		p.held |= slot
	}
	// Counted before joining: once in line the task is no longer ours to
	// touch. A task that gets the permit in join after all is uncounted as
	// any admitted task is.
	p.countWaiting(bit)
	p.w.bit = bit
	if l.join(&p.w) {
		p.held |= bit
		return Admitted
	}
	return MustWait
}

// stop ends a walk that did not reach Admitted: a task that may not wait
// gives back every permit and slot before it is rejected.
func (p *Permits) stop(out Outcome, reason string) (Outcome, string) {
	if out == MustWait {
		return out, ""
	}
	p.Release()
	return out, reason
}

// countWaiting counts a task about to join the line of layer bit as waiting.
func (p *Permits) countWaiting(bit uint8) {
	if p.held&countedWaiting == 0 {
		p.held |= countedWaiting
		p.group.in.waiting.Add(1)
		p.group.global.in.waiting.Add(1)
	}
	if bit == heldConc && p.held&countedConcWait == 0 {
		p.held |= countedConcWait
		p.group.in.waitingConc.Add(1)
	}
}

// uncount takes the task out of the waiting counts.
func (p *Permits) uncount() {
	if p.held&countedWaiting != 0 {
		p.group.out.waiting.Add(1)
		p.group.global.out.waiting.Add(1)
	}
	if p.held&countedConcWait != 0 {
		p.group.out.waitingConc.Add(1)
	}
	p.held &^= countedWaiting | countedConcWait
}

func (p *Permits) dropSlot(queue *semaphore.Weighted, slot uint8) {
	if p.held&slot != 0 {
		p.held &^= slot
		if queue != nil {
			queue.Release(1)
		}
	}
}

// Release gives back everything p holds, in reverse order of acquisition, and
// takes the task out of the counts. Each count drops before its permit is
// released, so a count never exceeds its limit. A permit some task waits for
// is handed to it: the caller then owns that task, and gets it from Handed.
// Release is a no-op the second time, and must not be called while the task
// is in a line.
func (p *Permits) Release() {
	if p.held == 0 { // nothing held, nor counted: released already, or never walked
		return
	}
	g := p.group
	gl := g.global
	p.uncount()
	if p.held&heldConc != 0 {
		g.out.running.Add(1)
		gl.out.running.Add(1)
		p.hand(g.conc)
	}
	p.dropSlot(g.queue, heldGroupSlot)
	if p.held&heldBulkhead != 0 {
		p.hand(g.bulkhead)
	}
	p.dropSlot(gl.queue, heldGlobalSlot)
	if p.held&heldGlobal != 0 {
		gl.out.inFlight.Add(1)
		p.hand(gl.sem)
	}
	p.held = 0
}

// hand releases a permit of l, keeping the waiter it went to, if any.
func (p *Permits) hand(l *line) {
	if l == nil {
		return
	}
	if w := l.release(); w != nil {
		w.next = p.handed
		p.handed = w
	}
}

func newSem(n int) *semaphore.Weighted {
	if n >= Unlimited {
		return nil
	}
	return semaphore.NewWeighted(int64(n))
}

// Probe reports an error naming the first semaphore of gl that is not fully
// available. It is meant for tests, after every task has finished: a
// semaphore with waiters also fails the probe.
func (gl *Global) Probe() error {
	return probe("global in-flight", gl.sem.semaphore(), gl.limit, "global queue", gl.queue, gl.queueLimit)
}

// Probe reports an error naming the first semaphore of g that is not fully
// available; see Global.Probe.
func (g *Group) Probe() error {
	if err := probe("bulkhead", g.bulkhead.semaphore(), g.limits.MaxInFlight, "concurrency", g.conc.semaphore(), g.limits.Concurrency); err != nil {
		return fmt.Errorf("group %q: %w", g.key, err)
	}
	if err := probe("queue", g.queue, g.limits.QueueThreshold, "", nil, 0); err != nil {
		return fmt.Errorf("group %q: %w", g.key, err)
	}
	return nil
}

func probe(name1 string, s1 *semaphore.Weighted, n1 int, name2 string, s2 *semaphore.Weighted, n2 int) error {
	for _, c := range []struct {
		name string
		s    *semaphore.Weighted
		n    int
	}{{name1, s1, n1}, {name2, s2, n2}} {
		if c.s == nil || c.n == 0 {
			continue
		}
		if !c.s.TryAcquire(int64(c.n)) {
			return fmt.Errorf("%s semaphore: %d permits not all available", c.name, c.n)
		}
		c.s.Release(int64(c.n))
	}
	return nil
}
