// Package groupstate holds the state a groupconc executor keeps per group and
// for the executor as a whole: the layer semaphores, the queue-threshold
// semaphores that bound their waiters, the live counts behind the stats, and
// each group's cancel scope. Permits walks one task through the layers.
//
// How a task waits for a permit is private to this package: callers see
// Try, Wait and Release and nothing of the semaphores behind them.
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

	// Executor-wide counts, side by side: a task updates them at the same
	// moments it updates inFlight, so they cost no extra cache miss, and
	// Stats reads them without visiting any group.
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
	return int(gl.running.Load()), int(gl.waiting.Load()), int(gl.inFlight.Load())
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

	// scope is the parent of the contexts of the group's tasks. ShutdownGroup
	// cancels it and installs a fresh one; eviction cancels it for good.
	// Stores happen under mu so that a shutdown never revives an evicted group.
	scope   atomic.Pointer[scope]
	parent  context.Context // the executor's context, parent of every scope
	mu      sync.Mutex
	evicted bool // guarded by mu

	// The counts change with every task: keep them off the cache line of
	// the fields every Submit reads.
	_ [64]byte
	// A task admitted inside Submit touches only running; the others are
	// kept by tasks that wait, so the common path pays for one count.
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

func newGroup(parent context.Context, key string, l Limits) *Group {
	g := &Group{
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
	running, waitingConc := int(g.running.Load()), int(g.waitingConc.Load())
	return running, int(g.waiting.Load()), running + waitingConc
}

// Shutdown cancels every task of the group with cause and gives later tasks a
// fresh scope. It does nothing to an evicted group, whose scope is already
// cancelled for good.
func (g *Group) Shutdown(cause error) {
	g.mu.Lock()
	if g.evicted {
		g.mu.Unlock()
		return
	}
	old := g.scope.Swap(newScope(g.parent))
	g.mu.Unlock()
	old.cancel(cause)
}

func (g *Group) evict(cause error) {
	g.mu.Lock()
	g.evicted = true
	g.mu.Unlock()
	g.scope.Load().cancel(cause)
}

// Registry maps group keys to their state. Lookups of known groups take no
// lock, and Range never blocks them. It is safe for concurrent use.
type Registry struct {
	groups  sync.Map // string -> *Group
	count   atomic.Int64
	parent  context.Context
	resolve func(key string) Limits
}

// NewRegistry returns an empty registry whose groups' scopes derive from
// parent and whose limits come from resolve, called once per group creation.
func NewRegistry(parent context.Context, resolve func(key string) Limits) *Registry {
	return &Registry{parent: parent, resolve: resolve}
}

// Get returns the group for key, creating it on first use. When two callers
// create the same group at once one state wins and both get it: limits are
// those of the first resolution stored.
func (r *Registry) Get(key string) *Group {
	if g, ok := r.groups.Load(key); ok {
		return g.(*Group)
	}
	g := newGroup(r.parent, key, r.resolve(key))
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

// Evict forgets the group for key and cancels its tasks with cause. Tasks
// still holding its permits release them into it; the next Get creates a new
// group with freshly resolved limits.
func (r *Registry) Evict(key string, cause error) {
	g, ok := r.groups.LoadAndDelete(key)
	if !ok {
		return
	}
	r.count.Add(-1)
	g.(*Group).evict(cause)
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
	Admitted  Outcome = iota + 1 // the task holds every permit
	MustWait                     // the task holds a queue slot and a place in line, and must call Wait
	Rejected                     // no queue slot; the task holds nothing
	Cancelled                    // the wait was stopped (see Stop); the task holds nothing
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

// Permits is what one task holds. It belongs to a single task and is not
// safe for concurrent use; the zero value holds nothing and must be Init'ed.
type Permits struct {
	global *Global
	group  *Group
	held   uint8
	w      waiter // the task's place in the line it waits in, if any
}

// Init ties p to its layers.
func (p *Permits) Init(gl *Global, g *Group) {
	p.global, p.group, p.held = gl, g, 0
}

// Group returns the group p was initialised with.
func (p *Permits) Group() *Group { return p.group }

// Try walks the layers without blocking. It returns Admitted, MustWait (the
// task holds a queue slot and a place in line at the layer it must wait at)
// or Rejected with a reason naming the threshold that turned it away.
func (p *Permits) Try() (Outcome, string) {
	return p.advance(nil)
}

// Stop is what ends a task's wait for permits, besides getting them.
type Stop struct {
	Caller <-chan struct{} // the caller's context's Done; nil if it never ends
	Scope  <-chan struct{} // the group scope's Done: ShutdownGroup, EvictGroup, Close
	// Cancelled is set before Interrupt is called, when the task is
	// cancelled through its handle.
	Cancelled *atomic.Bool
}

// Wait blocks until the task holds every permit, it is stopped, or a later
// layer has no queue slot for it. It returns Admitted, Cancelled or Rejected
// with the reason; after Cancelled or Rejected the task holds nothing.
// A task that got its last permit as it was stopped reports Admitted; the
// caller checks for cancellation before running it.
func (p *Permits) Wait(stop Stop) (Outcome, string) {
	return p.advance(&stop)
}

// Interrupt wakes the task if it waits in a line; its Wait then returns
// Cancelled, provided stop.Cancelled was set first. Safe from any goroutine.
func (p *Permits) Interrupt() { p.w.interrupt() }

// advance acquires the layers in their fixed order, global → bulkhead →
// concurrency. A layer is first tried without blocking; only a task that has
// to wait takes a queue slot. With stop nil advance never blocks: it stops
// at the first layer the task must wait at.
func (p *Permits) advance(stop *Stop) (Outcome, string) {
	gl, g := p.global, p.group
	if p.held&heldGlobal == 0 {
		out := p.layer(stop, gl.sem, gl.queue, heldGlobal, heldGlobalSlot)
		if out != Admitted {
			return p.stop(out, "global", gl.queueLimit)
		}
		gl.inFlight.Add(1)
		p.dropSlot(gl.queue, heldGlobalSlot)
	}
	if p.held&heldBulkhead == 0 {
		out := p.layer(stop, g.bulkhead, g.queue, heldBulkhead, heldGroupSlot)
		if out != Admitted {
			return p.stop(out, "group", g.limits.QueueThreshold)
		}
		// A slot taken here is kept until the concurrency permit is held, so
		// the task is not turned away between the two layers.
	}
	out := p.layer(stop, g.conc, g.queue, heldConc, heldGroupSlot)
	if out != Admitted {
		return p.stop(out, "group", g.limits.QueueThreshold)
	}
	// Count the task running before anyone can see its permit as free again.
	g.running.Add(1)
	gl.running.Add(1)
	p.uncount()
	p.dropSlot(g.queue, heldGroupSlot)
	return Admitted, ""
}

// layer takes one layer: the permit at once, or a queue slot and a place in
// the layer's line and then (unless stop is nil) the permit after waiting.
// A nil line is an Unlimited layer and costs nothing. A nil queue admits any
// number of waiters; its slot bit is still set, so a task is counted against
// the group threshold once from layer 2 to layer 3.
func (p *Permits) layer(stop *Stop, l *line, queue *semaphore.Weighted, bit, slot uint8) Outcome {
	if l == nil {
		p.held |= bit
		return Admitted
	}
	if p.w.line.Load() != l { // not yet waiting at this layer
		if l.tryAcquire() {
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
		if l.join(&p.w) {
			p.held |= bit
			return Admitted
		}
		p.countWaiting(bit)
	}
	if stop == nil {
		return MustWait
	}
	// A Cancel that came while the task was between two lines found it in
	// none: it is seen here, after joining, or it finds the task in line.
	if stop.Cancelled.Load() {
		if p.w.leave() {
			l.release() // granted meanwhile: hand it on
		}
		return Cancelled
	}
	if !p.w.wait(stop.Caller, stop.Scope) {
		return Cancelled
	}
	p.held |= bit
	return Admitted
}

// stop ends a walk that did not reach Admitted: a task that may not wait, or
// whose wait ended, gives back every permit and slot before it is rejected
// or cancelled.
func (p *Permits) stop(out Outcome, layer string, threshold int) (Outcome, string) {
	switch out {
	case MustWait:
		return out, ""
	case Rejected:
		p.Release()
		return out, fmt.Sprintf("%s queue threshold %d reached", layer, threshold)
	}
	p.Release()
	return out, ""
}

// countWaiting counts a task that joined the line of layer bit as waiting.
func (p *Permits) countWaiting(bit uint8) {
	if p.held&countedWaiting == 0 {
		p.held |= countedWaiting
		p.group.waiting.Add(1)
		p.global.waiting.Add(1)
	}
	if bit == heldConc {
		p.held |= countedConcWait
		p.group.waitingConc.Add(1)
	}
}

// uncount takes the task out of the waiting counts.
func (p *Permits) uncount() {
	if p.held&countedWaiting != 0 {
		p.group.waiting.Add(-1)
		p.global.waiting.Add(-1)
	}
	if p.held&countedConcWait != 0 {
		p.group.waitingConc.Add(-1)
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
// released, so a count never exceeds its limit. It is a no-op the second time.
func (p *Permits) Release() {
	gl, g := p.global, p.group
	if gl == nil {
		return
	}
	if l := p.w.line.Load(); l != nil && p.w.leave() {
		l.release() // granted as the wait was given up
	}
	p.uncount()
	if p.held&heldConc != 0 {
		g.running.Add(-1)
		gl.running.Add(-1)
		release(g.conc)
	}
	p.dropSlot(g.queue, heldGroupSlot)
	if p.held&heldBulkhead != 0 {
		release(g.bulkhead)
	}
	p.dropSlot(gl.queue, heldGlobalSlot)
	if p.held&heldGlobal != 0 {
		gl.inFlight.Add(-1)
		release(gl.sem)
	}
	p.held = 0
	p.global = nil
}

func release(l *line) {
	if l != nil {
		l.release()
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
