package groupconc

import (
	"sync"
	"sync/atomic"
)

// gate counts the accepted tasks, and those that ended, and refuses new ones
// once closed. Shutdown waits on it, and Stats reads Submitted from it.
//
// Careful interleaving, because entering takes no lock. The entered word
// holds both the count and the closed bit. So either enter sees the bit and
// fails, or close sees the task counted and the drain waits for it. Of the
// last leave and close, the later one sees the other's write, because both
// write and then read what the other wrote.
//
// The two counts only grow. The goroutine submitting tasks usually enters,
// and the goroutines running them usually leave. Padding them onto cache
// lines of their own measured no faster, with one goroutine submitting (W1,
// W2 and W3 of the benchmarks module, BenchmarkSubmitWithBatch). So they
// are not padded (benchmarks/RESULTS.md).
type gate struct {
	drained chan struct{} // closed when the gate is closed and every task left
	closing chan struct{} // closed when the gate is closed: blocked callers give up
	closed  atomic.Bool   // set once entered carries closedBit
	signals atomic.Bool   // set by whoever closes drained
	entered atomic.Uint64 // accepted tasks (Stats' Submitted); closedBit once closed
	left    atomic.Uint64 // accepted tasks that have ended
}

const closedBit = 1 << 62

func newGate() gate { return gate{drained: make(chan struct{}), closing: make(chan struct{})} }

// enter counts a new task in and reports true, or reports false once the
// gate is closed.
func (g *gate) enter() bool {
	for {
		n := g.entered.Load()
		if n&closedBit != 0 {
			return false
		}
		if g.entered.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// submitted returns how many tasks were accepted.
func (g *gate) submitted() uint64 { return g.entered.Load() &^ closedBit }

// leave counts a task out. The last one out of a closed gate signals
// drained.
func (g *gate) leave() {
	// entered no longer grows once closed is set.
	left := g.left.Add(1)
	if g.closed.Load() && left == g.submitted() {
		g.signal()
	}
}

// close refuses every later enter, and signals drained if no task is in.
func (g *gate) close() {
	n := g.entered.Or(closedBit) &^ closedBit
	if !g.closed.Swap(true) {
		close(g.closing)
	}
	if g.left.Load() == n {
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
// last exit and close, the later one sees the other's write.
type crew struct {
	running atomic.Int64
	closed  atomic.Bool
	signals atomic.Bool   // set by whoever closes done
	done    chan struct{} // closed when the crew is closed and none runs
}

func newCrew() crew { return crew{done: make(chan struct{})} }

// add counts a goroutine in, before it is started.
func (c *crew) add() { c.running.Add(1) }

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
