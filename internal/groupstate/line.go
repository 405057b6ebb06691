package groupstate

import (
	"sync"
	"sync/atomic"
)

// line is the permit protocol, written once for every layer and queue. It
// is a count of permits held against a limit that may change. It also has
// a queue of the waiters (see queue), which the queue's discipline serves
// in its order. The group layers and the global line under IsolationOff
// serve first come, first served. The global line under fair share serves
// the fairest group (fairQueue). A queue threshold's slots are a line too,
// whose waiters are blocked callers (slots).
//
// A waiting task is a record in the queue, not a parked goroutine. A permit
// given back while a task waits goes to the waiter the queue serves next.
// The releaser takes that waiter out of the queue and carries on with it.
// So a newcomer never passes a waiter.
//
// Interleaving: the count is lock-free while nobody waits. tryAcquire and
// release are one atomic operation each. Everything that involves a waiter
// happens under mu. A joiner announces itself (waiting) before it tries
// the count once more (enterLocked). A releaser gives its permit back
// before it looks for waiters. So one of the two sees the other, and a
// permit is never left free while a task waits.
type line[T any] struct {
	limit   atomic.Int64 // Unlimited never fills; changed under the waiters' mu once there is one
	waiting atomic.Int64 // waiters, and a joiner that holds mu; written under mu

	held    tally // may exceed limit while a lowered limit drains
	waiters atomic.Pointer[waiters[T]]
}

// waiters holds a line's waiters. It is the queue, and mu, which guards
// it. A line makes it the first time a task or caller must wait in it, or
// a change of limits sends one back to it. Then it keeps it. Most groups
// of a large key space never wait, and carry none
// (BenchmarkGroupFootprint). The lists of every priority lie beside the
// lock. The submitting and the running goroutine both write them for every
// task that waits. With the lists apart from the lock, five priorities cost
// more CPU per task than one priority served in the same order
// (BenchmarkW3HotGroupPriorities, sorted, at two CPUs). Beside the lock
// they cost what one does. Padding it to start on a cache line measured no
// different.
type waiters[T any] struct {
	mu   sync.Mutex
	fifo fifo[T]  // guarded by mu; the queue, unless disc is set
	disc queue[T] // the global line's discipline; nil: fifo

	whole atomic.Pointer[wholeTake[T]] // written under mu (see whole.go)
}

// newLine returns a line serving in q's order, with its waiters.
func newLine[T any](limit int, q queue[T]) *line[T] {
	l := &line[T]{}
	l.init(limit)
	l.waiters.Store(&waiters[T]{disc: q})
	return l
}

// init readies a line kept inside another structure (a group's layer, a
// queue's slots), which serves in priority, then arrival order.
func (l *line[T]) init(limit int) {
	l.limit.Store(int64(limit))
}

// lock locks the line's waiters, making them on first need, and returns it.
func (l *line[T]) lock() *waiters[T] {
	r := l.waiters.Load()
	if r == nil {
		r = new(waiters[T])
		if !l.waiters.CompareAndSwap(nil, r) {
			r = l.waiters.Load()
		}
	}
	r.mu.Lock()
	return r
}

func (r *waiters[T]) unlock() { r.mu.Unlock() }

// q returns the queue. The caller holds mu. The locked steps of a line
// below are given it, fetched once per locked section.
func (r *waiters[T]) q() queue[T] {
	if r.disc != nil {
		return r.disc
	}
	return &r.fifo
}

// tryAcquire takes a permit at once if one is free and nobody waits for it.
func (l *line[T]) tryAcquire() bool {
	return l.waiting.Load() == 0 && l.take()
}

// take takes a free permit, waiters or not. The caller sees to fairness.
func (l *line[T]) take() bool { return l.held.take(l.limit.Load()) }

// join takes a permit for w at once if nobody waits and one is free, and
// reports true. Otherwise it puts w in the queue and reports false. The
// line owns w's task then. x is w's Ext, nil for a plain task.
func (l *line[T]) join(w *Permits[T], x *Ext) (acquired bool) {
	r := l.lock()
	defer r.unlock()
	q := r.q()
	l.waiting.Add(1) // as enterLocked
	if q.empty() && l.takeForLocked(r, w, x, w.bit, x.lvl()) {
		l.waiting.Add(-1)
		return true
	}
	l.pushExt(r, w, x, false)
	// Where costs differ, permits may be free while the head waits for
	// more. A task that went ahead of it by priority takes them if it fits,
	// as grantLocked would: it waits behind no task of lower priority.
	// Under fair share the choice made as they freed stands. If none was
	// made, it is made now: the task it falls on takes them if it fits,
	// and else stays chosen, so no task that comes later goes ahead of it.
	if r.fifo.costly && (!q.chooses() || l.held.load() < l.limit.Load()) && q.peek() == w && l.takeForLocked(r, w, x, w.bit, x.lvl()) {
		l.removeLocked(q, w)
		return true
	}
	return false
}

// enterLocked announces a joiner and takes a permit for it if the queue is
// empty and one is free. If it reports false, the joiner is counted
// waiting. It must then join the queue, or withdraw.
func (l *line[T]) enterLocked(q queue[T]) bool {
	l.waiting.Add(1) // before take: a release after this sees a waiter
	if q.empty() && l.take() {
		l.waiting.Add(-1)
		return true
	}
	return false
}

// withdrawLocked takes back enterLocked's announcement of a joiner that
// does not join after all.
func (l *line[T]) withdrawLocked() { l.waiting.Add(-1) }

// pushLocked puts w, counted in waiting, in the queue. It goes at its
// place, or ahead of its priority if front (see queue.pushFront).
func (l *line[T]) pushLocked(r *waiters[T], w *Permits[T], front bool) {
	l.pushExt(r, w, w.x(), front)
}

// pushExt is pushLocked for w of Ext x (nil: plain), which the caller has.
func (l *line[T]) pushExt(r *waiters[T], w *Permits[T], x *Ext, front bool) {
	q := r.q()
	if !x.costsOne() {
		r.fifo.costly = true
	}
	switch {
	case front:
		q.pushFront(w)
	case x != nil && x.unparked != 0:
		pushResumed(q, w)
	default:
		q.push(w)
	}
	w.line.Store(l)
}

// release gives back the n permits p holds here. It returns the waiters
// handed permits, taken out of the queue and chained by next. The caller
// owns them now. A permit passes straight to the waiter served next while
// the limit has room for it.
func (l *line[T]) release(p *Permits[T], n int64) *Permits[T] {
	if l.waiting.Load() == 0 {
		l.held.giveN(n)
		if l.waiting.Load() == 0 {
			return nil
		}
		// A task joined as the permits came back. It may have found the
		// count full.
		n = 0
	}
	r := l.lock()
	defer r.unlock()
	return l.passLocked(r, p, n)
}

// passLocked gives back p's n permits, counted held (none if n is 0). One
// goes straight to the waiter served next while the limit has room for
// it. Otherwise they go to the count, and on to the waiters that fit
// (grantLocked). Where costs differ they always go to the count.
func (l *line[T]) passLocked(r *waiters[T], p *Permits[T], n int64) *Permits[T] {
	q := r.q()
	q.gave(p)
	if n == 1 && !r.fifo.costly && !q.empty() && l.held.load() <= l.limit.Load() {
		return l.handLocked(q)
	}
	if n > 0 {
		l.held.giveN(n)
	}
	return l.grantLocked(r)
}

// handOne takes out the waiter served next, to pass p's permit straight
// to it, if one waits, the limit has room for it, and it is its group's
// turn to walk on (see turn.go). The caller ends that turn. Otherwise it gives
// nothing back and returns nil, and release gives the permit back.
func (l *line[T]) handOne(p *Permits[T]) *Permits[T] {
	if l.waiting.Load() == 0 {
		return nil
	}
	r := l.lock()
	defer r.unlock()
	q := r.q()
	if r.fifo.costly || q.empty() || l.held.load() > l.limit.Load() || !q.peek().tryTurn() {
		return nil
	}
	q.gave(p)
	return l.popLocked(q)
}

// releaseJoin gives back p's permit as release does. Then it puts w in the
// queue if waiters are left there, since w would wait behind them anyway.
// It reports whether it did. If so, the line owns w's task.
func (l *line[T]) releaseJoin(p, w *Permits[T]) (handed *Permits[T], joined bool) {
	r := l.lock()
	defer r.unlock()
	handed = l.passLocked(r, p, 1)
	if r.q().empty() {
		return handed, false
	}
	l.waiting.Add(1) // as enterLocked: a joiner that found waiters
	l.pushLocked(r, w, false)
	return handed, true
}

// setLimit changes the limit. A lowered limit takes nothing back. Tasks
// holding permits keep them, and no permit is given until the count is
// below the new limit. A raised one tops up a task holding the whole
// limit (see whole.go), and grant hands on the rest.
func (l *line[T]) setLimit(n int) {
	if l.waiters.Load() == nil {
		// Nobody has waited, so the limit is stored alone. If waiters were
		// made meanwhile, it is stored again under its mu, as always.
		l.limit.Store(int64(n))
		if l.waiters.Load() == nil {
			return
		}
	}
	r := l.lock()
	defer r.unlock()
	l.limit.Store(int64(n))
	l.topUpLocked(r, int64(n))
}

// lowerTo changes the limit to n if n is lower. Only changes of limits
// write it, one at a time, so the limit it reads stays as read.
func (l *line[T]) lowerTo(n int) {
	if int64(n) < l.limit.Load() {
		l.setLimit(n)
	}
}

// grant hands free permits to the waiters that fit, in order, and returns
// them as release does.
func (l *line[T]) grant() *Permits[T] {
	if l.waiters.Load() == nil { // nobody waits
		return nil
	}
	r := l.lock()
	defer r.unlock()
	return l.grantLocked(r)
}

// grantLocked hands free permits to the waiters that fit, in the order the
// queue serves them. A waiter that needs more than are free is not passed
// by those behind it, as in semaphore.Weighted.
func (l *line[T]) grantLocked(r *waiters[T]) *Permits[T] {
	var c chain[T]
	q := r.q()
	if !r.fifo.costly {
		for !q.empty() && l.take() {
			c.add(l.handLocked(q))
		}
		return c.head
	}
	// A queue that chooses is asked only with a permit free, as in join. A
	// choice made with none would stand against the shares of the
	// releases to come.
	for !q.empty() && (!q.chooses() || l.held.load() < l.limit.Load()) {
		w := q.peek()
		if x := w.x(); !l.takeForLocked(r, w, x, w.bit, x.lvl()) {
			break
		}
		c.add(l.handLocked(q))
	}
	return c.head
}

// handLocked takes the waiter served next out of the queue, handed the
// caller's permit. It returns it if it is its group's turn to walk on, or
// nil if it waits for its turn (see turn.go). It takes the turn, or waits
// for it, before it leaves the count of waiters.
//
// A task of a group at the top handed the last layer of its walk counts
// as running from now (Global.running reads that layer). So it stops
// counting as waiting now too, not once it walks on: a snapshot taken
// meanwhile counts it once.
func (l *line[T]) handLocked(q queue[T]) *Permits[T] {
	w := q.pop()
	w.line.Store(nil)
	walks := w.takeTurn() // nobody owns w now if it waits
	l.waiting.Add(-1)
	if !walks {
		return nil
	}
	if w.bit == w.group.global.runBit && w.group.parent == nil {
		w.stopWaiting()
	}
	return w
}

// popLocked takes the waiter served next out of the queue. The permit is
// the caller's to give it.
func (l *line[T]) popLocked(q queue[T]) *Permits[T] {
	w := q.pop()
	l.outLocked(w)
	return w
}

// removeLocked takes w, which leaves, out of the queue.
func (l *line[T]) removeLocked(q queue[T], w *Permits[T]) {
	q.remove(w)
	l.outLocked(w)
}

func (l *line[T]) outLocked(w *Permits[T]) {
	w.line.Store(nil)
	l.waiting.Add(-1)
}
