package groupstate

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// line is one layer's semaphore with a first-come, first-served line of the
// tasks waiting for it. The semaphore counts the permits; the line decides
// who gets a released one.
//
// A waiting task is a record in the line, not a parked goroutine: tasks join
// inside Submit, on the caller's goroutine, and a released permit is handed
// to the record at the head, which the releaser takes out of the line and
// carries on with. So a group's waiting tasks get their permits in Submit
// order, and a waiting task costs its record and nothing else.
//
// Nobody blocks inside the semaphore: it is only tried and released, under
// mu whenever the line may have waiters, so a permit is never released to
// the semaphore while a task waits for it. It is safe for concurrent use.
type line struct {
	sem   *semaphore.Weighted
	size  int
	count atomic.Int64 // waiters in line; written under mu

	mu         sync.Mutex
	head, tail *waiter // guarded by mu
}

// newLine returns a line of n permits, or nil (no line, no cost) for
// Unlimited.
func newLine(n int) *line {
	if n >= Unlimited {
		return nil
	}
	return &line{sem: semaphore.NewWeighted(int64(n)), size: n}
}

// tryAcquire takes a permit at once if one is free and nobody waits for it:
// a newcomer never passes a waiter.
func (l *line) tryAcquire() bool {
	return l.count.Load() == 0 && l.sem.TryAcquire(1)
}

// release gives a permit back: to the head of the line if someone waits,
// and then returns that waiter, taken out of the line and now the caller's
// to carry on with; else to the semaphore, and returns nil.
func (l *line) release() *waiter {
	l.mu.Lock()
	w := l.head
	if w != nil {
		l.removeLocked(w)
	} else {
		l.sem.Release(1)
	}
	l.mu.Unlock()
	return w
}

// waiter is a task's place in a line. Its zero value is in no line.
//
// Whoever takes a waiter out of its line owns the task from then on: the
// releaser that hands it a permit, or the canceller that makes it leave.
// The goroutine that put it in the line no longer owns it, and may touch it
// again only by making it leave.
type waiter struct {
	line  atomic.Pointer[line] // the line w waits in; nil when in none
	prev  *waiter              // guarded by line.mu
	next  *waiter              // guarded by line.mu; out of line, links a Permits' handed list
	bit   uint8                // the layer w waits for; set before joining
	owner *Permits             // the Permits w belongs to
}

// join takes a permit for w at once if the line is empty and one is free,
// and reports true; otherwise it puts w at the tail of the line and reports
// false. Trying again under mu closes the gap between a failed tryAcquire
// and joining, in which the last holder may have released its permit to the
// semaphore.
func (l *line) join(w *waiter) (acquired bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count.Load() == 0 && l.sem.TryAcquire(1) {
		return true
	}
	w.prev, w.next = l.tail, nil
	if l.tail == nil {
		l.head = w
	} else {
		l.tail.next = w
	}
	l.tail = w
	l.count.Add(1)
	w.line.Store(l)
	return false
}

// leave takes w out of its line and reports whether it did so, in which case
// the caller now owns the task (holding no permit of that line). It reports
// false if w is in no line: its task belongs to whoever took it out, who
// sees the reason for leaving (its task's cancellation) when next it looks.
// Safe from any goroutine.
func (w *waiter) leave() bool {
	l := w.line.Load()
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.line.Load() != l { // taken out (and perhaps put in another) meanwhile
		return false
	}
	l.removeLocked(w)
	return true
}

// sweep takes every waiter whose owner matches out of the line and returns
// their owners, which the caller now owns.
func (l *line) sweep(match func(p *Permits) bool, out []*Permits) []*Permits {
	if l == nil || l.count.Load() == 0 {
		return out
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for w := l.head; w != nil; {
		next := w.next
		if match == nil || match(w.owner) {
			l.removeLocked(w)
			out = append(out, w.owner)
		}
		w = next
	}
	return out
}

func (l *line) removeLocked(w *waiter) {
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
	l.count.Add(-1)
}

// semaphore returns l's semaphore, nil for a nil line; for probes.
func (l *line) semaphore() *semaphore.Weighted {
	if l == nil {
		return nil
	}
	return l.sem
}
