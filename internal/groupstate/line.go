package groupstate

import (
	"math"
	"sync"
	"sync/atomic"
)

// line is one layer's permits, counted against a limit that may change,
// with a first-come, first-served line of the tasks waiting for one.
//
// A waiting task is a record in the line, not a parked goroutine. A permit
// given back while a task waits goes to the record at the head, which the
// releaser takes out of the line and carries on with; so waiters get their
// permits in the order they joined, and a newcomer never passes one.
//
// The count is lock-free while nobody waits: tryAcquire and release are one
// atomic operation each. Everything that involves a waiter happens under mu.
// A joiner announces itself (waiting) before it tries the count once more,
// and a releaser lowers the count before it looks for waiters: one of the
// two sees the other, so a permit is never left free while a task waits.
type line[T any] struct {
	limit   atomic.Int64 // Unlimited never fills; changed under mu
	waiting atomic.Int64 // waiters, and a joiner that holds mu; written under mu

	mu         sync.Mutex
	head, tail *waiter[T] // guarded by mu
	bands      *bands[T]  // guarded by mu; nil while every waiter has the default priority

	fair    *fairLine[T] // for the lock of a fair line: whose it is
	chained bool         // the global line: see Group.ghead

	// A fair line's own, here on mu's cache line, which every join and
	// hand-off holds anyway; guarded by mu.
	slow bool   // its order is in use
	seq  uint32 // its join counter, compared modulo 2^32

	held permits // may exceed limit while a lowered limit drains
}

// permits counts a layer's permits held as two sums that only grow, taken
// and given back, on cache lines of their own: a task usually takes its
// permits on the goroutine that submits it and gives them back on the one
// that runs it, so the two sides do not write to one line
// (BenchmarkW1Unlimited/peer=groupconc). An Unlimited layer only adds.
type permits struct {
	_     [64]byte // off the line of the fields both sides read
	taken atomic.Int64
	_     [56]byte
	given atomic.Int64
	_     [56]byte
}

// load returns the permits held. It reads taken first, so it never counts
// more than were held at once.
func (c *permits) load() int64 {
	t := c.taken.Load()
	return t - c.given.Load()
}

// take takes a permit if fewer than limit are held. given only grows, so
// the count checked is at least the count when the CAS succeeds.
func (c *permits) take(limit int64) bool {
	if limit == Unlimited {
		c.taken.Add(1)
		return true
	}
	for {
		t := c.taken.Load()
		if t-c.given.Load() >= limit {
			return false
		}
		if c.taken.CompareAndSwap(t, t+1) {
			return true
		}
	}
}

func (c *permits) give(n int64) { c.given.Add(n) }

func newLine[T any](limit int) *line[T] {
	l := new(line[T])
	l.limit.Store(int64(limit))
	return l
}

// tryAcquire takes a permit at once if one is free and nobody waits for it.
func (l *line[T]) tryAcquire() bool {
	return l.waiting.Load() == 0 && l.take()
}

// take takes a free permit, waiters or not; the caller sees to fairness.
func (l *line[T]) take() bool { return l.held.take(l.limit.Load()) }

// join takes a permit for w at once if nobody waits and one is free, and
// reports true; otherwise it puts w at the tail of the line and reports
// false: the line owns w's task now.
func (l *line[T]) join(w *waiter[T]) (acquired bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waiting.Add(1) // before take: a release after this sees a waiter
	if l.head == nil && l.take() {
		l.waiting.Add(-1)
		return true
	}
	l.appendLocked(w)
	return false
}

// appendLocked puts w, counted in waiting, behind every waiter of its
// priority or a higher one: at the tail while all have the default. The
// fair line keeps its waiters in the order they joined, whatever their
// priority: priority orders the tasks of a group, not the groups (see
// fairLine.bestOf).
func (l *line[T]) appendLocked(w *waiter[T]) {
	if l.fair == nil && (l.bands != nil || w.prio != PriorityDefault) {
		l.insertLocked(w)
	} else {
		w.prev, w.next = l.tail, nil
		if l.tail == nil {
			l.head = w
		} else {
			l.tail.next = w
		}
		l.tail = w
	}
	w.line.Store(l)
	if l.chained {
		w.owner.group.chainLocked(w.owner, false)
	}
}

// release gives back one permit. It returns the waiters handed a permit,
// taken out of the line and chained by next: the caller owns them now.
// The permit passes straight to the head while the limit has room for it.
func (l *line[T]) release() *waiter[T] {
	if l.waiting.Load() == 0 {
		l.held.give(1)
		if l.waiting.Load() == 0 {
			return nil
		}
		// A task joined as the permit came back; it may have found the
		// count full.
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.grantLocked()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.head; w != nil && l.held.load() <= l.limit.Load() {
		l.removeLocked(w)
		return w
	}
	l.held.give(1)
	return l.grantLocked()
}

// setLimit changes the limit. A lowered limit takes nothing back: tasks
// holding permits keep them, and no permit is given until the count is
// below the new limit. For a raised one, grant hands on the permits.
func (l *line[T]) setLimit(n int) {
	l.mu.Lock()
	l.limit.Store(int64(n))
	l.mu.Unlock()
}

// grant hands free permits to the waiters that fit, in order, and returns
// them as release does.
func (l *line[T]) grant() *waiter[T] {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.grantLocked()
}

// grantLocked hands free permits to the waiters at the head and returns
// them chained in line order.
func (l *line[T]) grantLocked() *waiter[T] {
	var c chain[T]
	for w := l.head; w != nil && l.take(); w = l.head {
		l.removeLocked(w)
		c.add(w)
	}
	return c.head
}

// chain links waiters taken out of a line, in order, by next.
type chain[T any] struct{ head, tail *waiter[T] }

func (c *chain[T]) add(w *waiter[T]) {
	if c.tail == nil {
		c.head = w
	} else {
		c.tail.next = w
	}
	c.tail = w
}

// takeAll takes every waiter out of the line and appends it to ws: the
// caller owns their tasks now.
func (l *line[T]) takeAll(ws []*waiter[T]) []*waiter[T] {
	if l.waiting.Load() == 0 {
		return ws
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := l.head; w != nil; w = l.head {
		l.removeLocked(w)
		ws = append(ws, w)
	}
	return ws
}

// requeue puts ws, whose tasks hold a permit of l beyond a lowered limit,
// back at the head of the line, in order, taking their permits back; then
// hands free permits on as setLimit does.
func (l *line[T]) requeue(ws []*waiter[T], bit uint8) *waiter[T] {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(ws) - 1; i >= 0; i-- {
		w := ws[i]
		w.owner.held &^= bit
		w.bit = bit
		l.frontLocked(w)
		w.line.Store(l)
		if l.chained {
			w.owner.group.chainLocked(w.owner, true)
		}
		l.waiting.Add(1)
		l.held.give(1)
	}
	return l.grantLocked()
}

// sweep takes every waiter whose task matches out of the line and appends
// their tasks to out: the caller owns them now.
func (l *line[T]) sweep(match func(p *Permits[T]) bool, out []*T) []*T {
	if l.waiting.Load() == 0 {
		return out
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := l.head; w != nil; {
		next := w.next
		if match == nil || match(w.owner) {
			l.takeOutLocked(w)
			out = append(out, w.owner.owner)
		}
		w = next
	}
	return out
}

func (l *line[T]) removeLocked(w *waiter[T]) {
	l.unbandLocked(w)
	if w.prev == nil {
		l.head = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		l.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next = nil, nil
	w.line.Store(nil)
	if l.chained {
		w.owner.group.unchainLocked(w.owner)
	}
	l.waiting.Add(-1)
}

// firstOf returns when g's first task in the line was submitted (the
// oldest of the heads of its priorities, in a line of g's own), or
// math.MaxInt64 if none waits.
func (l *line[T]) firstOf(g *Group[T]) int64 {
	if l.waiting.Load() == 0 {
		return math.MaxInt64
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.chained {
		if g.ghead == nil {
			return math.MaxInt64
		}
		return g.ghead.submitted
	}
	first := int64(math.MaxInt64)
	l.bandHeadsLocked(func(w *waiter[T]) { first = min(first, w.owner.submitted) })
	return first
}

// waiter is a task's place in a line. Its zero value is in no line.
//
// Whoever takes a waiter out of its line owns the task from then on: the
// releaser that hands it a permit, or the canceller that makes it leave.
// The goroutine that put it in the line no longer owns it, and may touch it
// again only by making it leave.
type waiter[T any] struct {
	line  atomic.Pointer[line[T]] // the line w waits in (a fair line's lock), if any
	prev  *waiter[T]              // guarded by the line's mu
	next  *waiter[T]              // guarded by the line's mu; out of line, chains handed waiters
	seq   uint32                  // when w joined the fair line; guarded by its mu
	bit   uint8                   // the layer w waits for; set before joining
	prio  uint8                   // 0 is the highest; set before the task first joins a line
	owner *Permits[T]
}

// leave takes w out of the line it waits in and reports whether it did so,
// in which case the caller owns the task. It reports false if w is in no
// line: its task belongs to whoever took it out, who sees the reason for
// leaving when next it looks. Safe from any goroutine.
func (w *waiter[T]) leave() bool {
	l := w.line.Load()
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.line.Load() != l { // taken out meanwhile
		return false
	}
	l.takeOutLocked(w)
	return true
}

// takeOutLocked takes w out of the line, with the fair line's own
// bookkeeping when l is a fair line's lock.
func (l *line[T]) takeOutLocked(w *waiter[T]) {
	if l.fair != nil {
		l.fair.removeLocked(w)
		return
	}
	l.removeLocked(w)
}
