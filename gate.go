package groupconc

import (
	"sync"
	"sync/atomic"

	"github.com/kobe/groupconc/internal/groupstate"
)

// gate counts the accepted tasks, those that ended and how, and refuses new
// ones once closed. Shutdown waits on it, and Stats reads its counts. Every
// task writes the counts, so they are kept in shards, a cache line each
// (see groupstate.Shards). Each count is the sum of its shards.
//
// Careful interleaving, because entering takes no lock. A shard's entered
// word holds both its count and the closed bit. So either enter sees the
// bit and fails, or close sees the task counted and the drain waits for
// it. close sets the bit in every shard before it sets closed. So once
// closed is set, the entered counts are final. Of the last leave and
// close, the later one sees the other's write, because both write and then
// read all that the other wrote.
type gate struct {
	drained chan struct{} // closed when the gate is closed and every task left
	closing chan struct{} // closed when the gate is closed: blocked callers give up
	closed  atomic.Bool   // set once every shard carries closedBit
	signals atomic.Bool   // set by whoever closes drained
	shards  *[groupstate.Shards]shard
}

// shard is a part of the gate's counts, a cache line of its own. The
// allocator places the array of 512 bytes at a multiple of 64.
type shard struct {
	entered  atomic.Uint64                         // accepted tasks (Stats' Submitted); closedBit once closed
	left     atomic.Uint64                         // accepted tasks that have ended
	outcomes [groupstate.NumOutcomes]atomic.Uint64 // completed tasks, by outcomeIndex
	_        [16]byte
}

const closedBit = 1 << 62

func newGate() gate {
	return gate{drained: make(chan struct{}), closing: make(chan struct{}), shards: new([groupstate.Shards]shard)}
}

// shardOf returns the shard t counts in.
func (g *gate) shardOf(t *task) *shard { return &g.shards[groupstate.ShardOf(&t.permits)] }

// enter counts t in and reports true, or reports false once the gate is
// closed.
func (g *gate) enter(t *task) bool {
	s := g.shardOf(t)
	for {
		n := s.entered.Load()
		if n&closedBit != 0 {
			return false
		}
		if s.entered.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// submitted returns how many tasks were accepted.
func (g *gate) submitted() uint64 {
	var n uint64
	for i := range g.shards {
		n += g.shards[i].entered.Load() &^ closedBit
	}
	return n
}

// ended returns how many tasks have left.
func (g *gate) ended() uint64 {
	var n uint64
	for i := range g.shards {
		n += g.shards[i].left.Load()
	}
	return n
}

// outcomes returns how many tasks completed with each outcome, by
// outcomeIndex.
func (g *gate) outcomes() (n [groupstate.NumOutcomes]uint64) {
	for i := range g.shards {
		for j := range n {
			n[j] += g.shards[i].outcomes[j].Load()
		}
	}
	return n
}

// count counts t's outcome i.
func (g *gate) count(t *task, i int) { g.shardOf(t).outcomes[i].Add(1) }

// leave counts t out. The last one out of a closed gate signals drained.
func (g *gate) leave(t *task) {
	g.shardOf(t).left.Add(1)
	if g.closed.Load() && g.ended() == g.submitted() {
		g.signal()
	}
}

// close refuses every later enter, and signals drained if no task is in.
func (g *gate) close() {
	var n uint64
	for i := range g.shards {
		n += g.shards[i].entered.Or(closedBit) &^ closedBit
	}
	if !g.closed.Swap(true) {
		close(g.closing)
	}
	if g.ended() == n {
		g.signal()
	}
}

// signal closes drained, once.
func (g *gate) signal() {
	if g.signals.CompareAndSwap(false, true) {
		close(g.drained)
	}
}

// callers counts the callers blocked for a queue slot, so that Shutdown and
// Close return only once each has given up (see SubmitWith).
type callers struct {
	mu   sync.Mutex
	n    int           // guarded by mu
	none chan struct{} // guarded by mu; closed when n drops to 0, made by wait
}

func (c *callers) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *callers) done() {
	c.mu.Lock()
	if c.n--; c.n == 0 && c.none != nil {
		close(c.none)
		c.none = nil
	}
	c.mu.Unlock()
}

// wait returns once no caller is counted.
func (c *callers) wait() {
	c.mu.Lock()
	if c.n == 0 {
		c.mu.Unlock()
		return
	}
	if c.none == nil {
		c.none = make(chan struct{})
	}
	none := c.none
	c.mu.Unlock()
	<-none
}

// crew counts the executor's goroutines that are running. So Shutdown can
// wait for the goroutines themselves and not only for their tasks. A
// goroutine that ended a task goes on to hand its permits on and look for
// the next task before it ends.
//
// Interleaving: a goroutine is counted in (add) either for a task that has
// not left the gate yet, or by a goroutine that is counted itself. So once
// the gate is drained, the count only falls. The drained Shutdown closes the
// crew (close) knowing that the first time it reaches 0 is the last. Of the
// last exit and close, the later one sees the other's write. A goroutine
// started for the executor's lines, not for a task of its own (repark,
// drain), may find the gate drained, its task ended. It joins only while
// the crew is open (join): of its count and close, the later one sees the
// other, so either Shutdown waits for it or it does not start.
type crew struct {
	running atomic.Int64
	closed  atomic.Bool
	signals atomic.Bool   // set by whoever closes done
	done    chan struct{} // closed when the crew is closed and none runs
}

func newCrew() crew { return crew{done: make(chan struct{})} }

// add counts a goroutine in, before it is started.
func (c *crew) add() { c.running.Add(1) }

// join counts a goroutine in, as add does, unless the crew is closed. Then
// every task has ended, and the goroutine has nothing to do: it is not
// started.
func (c *crew) join() bool {
	c.running.Add(1)
	if c.closed.Load() {
		c.exit()
		return false
	}
	return true
}

// exit counts a goroutine out, as the last thing it does.
func (c *crew) exit() {
	if c.running.Add(-1) == 0 && c.closed.Load() {
		c.signal()
	}
}

// close is called once the gate is drained. Its done channel closes when no
// goroutine of the crew runs any more.
func (c *crew) close() {
	c.closed.Store(true)
	if c.running.Load() == 0 {
		c.signal()
	}
}

// signal closes done, once.
func (c *crew) signal() {
	if c.signals.CompareAndSwap(false, true) {
		close(c.done)
	}
}

// stackRoom is about what a goroutine of the executor uses to run a task
// and give back its permits.
const stackRoom = 2048

// growStack grows the goroutine's stack to room for stackRoom bytes at
// once. Each goroutine of the crew calls it first. A goroutine starts
// with a small stack, and growing it ten frames deep, in a release, cost
// the runtime as much as the rest of a Submit and Wait: called first,
// BenchmarkDoSubmitWait took 2.3 µs → 1.3 µs. Tasks that need more stack
// grow it as usual.
//
//go:noinline
func growStack() {
	var b [stackRoom]byte
	keep(b[:])
}

//go:noinline
func keep([]byte) {}
