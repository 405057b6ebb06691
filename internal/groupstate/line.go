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
// Tasks join inside Submit, on the caller's goroutine, and a released permit
// is handed straight to the task at the head, so a group's waiting tasks get
// their permits in Submit order, and a waiting task is woken once, when it
// holds its permit. (Parked in the semaphore's Acquire instead, tasks would
// queue in the order the scheduler first runs their goroutines, which is not
// Submit order: the newest goroutine often runs first.)
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
// else to the semaphore.
func (l *line) release() {
	l.mu.Lock()
	if w := l.head; w != nil {
		l.removeLocked(w)
		w.granted = true
		close(w.wake)
	} else {
		l.sem.Release(1)
	}
	l.mu.Unlock()
}

// waiter is a task's place in a line. Its zero value is in no line. The
// task's own goroutine joins, waits and leaves; Interrupt may come from any
// goroutine.
type waiter struct {
	line    atomic.Pointer[line] // the line w waits in; nil once it left
	prev    *waiter              // guarded by line.mu
	next    *waiter              // guarded by line.mu
	queued  bool                 // guarded by line.mu: in the list
	granted bool                 // guarded by line.mu: handed a permit
	wake    chan struct{}        // closed when granted or interrupted
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
	w.prev, w.next, w.queued, w.granted = l.tail, nil, true, false
	w.wake = make(chan struct{})
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

// wait blocks until w is handed a permit, is interrupted, or one of the
// channels closes, then leaves the line. It reports whether w holds a
// permit: a grant that raced with an interruption is kept, and the caller,
// seeing its task cancelled, releases it.
func (w *waiter) wait(caller, scope <-chan struct{}) bool {
	select {
	case <-w.wake:
	case <-caller:
	case <-scope:
	}
	return w.leave()
}

// leave takes w out of its line and reports whether it was granted a permit.
func (w *waiter) leave() bool {
	l := w.line.Load()
	if l == nil {
		return false
	}
	l.mu.Lock()
	if w.queued {
		l.removeLocked(w)
	}
	granted := w.granted
	w.line.Store(nil)
	l.mu.Unlock()
	return granted
}

// interrupt wakes w if it is waiting, without a permit. Safe from any
// goroutine.
func (w *waiter) interrupt() {
	l := w.line.Load()
	if l == nil {
		return
	}
	l.mu.Lock()
	if w.line.Load() == l && w.queued {
		l.removeLocked(w)
		close(w.wake)
	}
	l.mu.Unlock()
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
	w.prev, w.next, w.queued = nil, nil, false
	l.count.Add(-1)
}

// semaphore returns l's semaphore, nil for a nil line; for probes.
func (l *line) semaphore() *semaphore.Weighted {
	if l == nil {
		return nil
	}
	return l.sem
}
