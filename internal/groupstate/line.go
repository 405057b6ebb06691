package groupstate

import (
	"context"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// line is a layer's semaphore with its waiters served in the order they
// joined. Tasks join inside Submit, on the caller's goroutine, and only the
// task at the head of the line blocks in the semaphore's Acquire; the others
// wait for their turn on a channel. So a group's waiting tasks get their
// permits in Submit order. Without the line they would reach Acquire in the
// order the scheduler first runs their goroutines, which is not that order
// (the newest goroutine often runs first).
//
// The semaphore still does all the counting: the line only decides who may
// call Acquire. It is safe for concurrent use.
type line struct {
	sem   *semaphore.Weighted
	size  int
	count atomic.Int64 // waiters in line: a newcomer may not pass them

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

// tryAcquire takes a permit at once, unless one is free only because the
// task owed it has not yet come to claim it: a newcomer never passes a
// waiter.
func (l *line) tryAcquire() bool {
	return l.count.Load() == 0 && l.sem.TryAcquire(1)
}

func (l *line) release() { l.sem.Release(1) }

// waiter is a task's place in a line; its zero value is in no line. It
// belongs to one task.
type waiter struct {
	line       *line
	prev, next *waiter       // guarded by line.mu
	turn       chan struct{} // closed when the waiter reaches the head
}

// join puts w at the tail of l.
func (l *line) join(w *waiter) {
	w.line = l
	w.turn = make(chan struct{})
	l.mu.Lock()
	w.prev = l.tail
	if l.tail == nil {
		l.head = w
		close(w.turn)
	} else {
		l.tail.next = w
	}
	l.tail = w
	l.count.Add(1)
	l.mu.Unlock()
}

// wait blocks until w holds a permit of its line or ctx ends, and returns
// ctx.Err() in the second case. Either way w has left the line, and passed
// the head to the next waiter, when wait returns.
func (w *waiter) wait(ctx context.Context) error {
	l := w.line
	defer l.leave(w)
	select {
	case <-w.turn:
	case <-ctx.Done():
		return ctx.Err()
	}
	// Acquire returns an error only after handing back anything it was
	// granted concurrently with ctx ending, so on error nothing is held.
	return l.sem.Acquire(ctx, 1)
}

// leave takes w out of l; if w was the head, the next waiter's turn comes.
func (l *line) leave(w *waiter) {
	l.mu.Lock()
	if w.prev == nil {
		l.head = w.next
		if l.head != nil {
			close(l.head.turn)
		}
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		l.tail = w.prev
	} else {
		w.next.prev = w.prev
	}
	// Still counted while it held the head, so no newcomer passed it.
	l.count.Add(-1)
	l.mu.Unlock()
	*w = waiter{}
}

// semaphore returns l's semaphore, nil for a nil line; for probes.
func (l *line) semaphore() *semaphore.Weighted {
	if l == nil {
		return nil
	}
	return l.sem
}
