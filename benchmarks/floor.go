package benchmarks

import (
	"context"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// floorLine is the least an executor can do for W3HotGroupPriorities.
// BenchmarkW3HotPrioritiesFloor measures it. It is one group of limit 1.
// Its waiting tasks stand in five lists, one per priority, under one
// mutex. The goroutine that ends a task runs the next. A task is one
// allocation, of the size of groupconc's. A shape of priorities costs
// floorLine what serving tasks in that order costs the machine. That cost
// does not depend on the executor.
type floorLine struct {
	mu      sync.Mutex
	running bool                         // guarded by mu
	full    uint8                        // guarded by mu, bit p if lists[p] has a task
	lists   [5]struct{ h, t *floorTask } // guarded by mu
}

// floorTask is one task, with its function, its times and its completion.
// It is 144 bytes, as groupconc's TaskHandle[struct{}] is.
type floorTask struct {
	next                      *floorTask
	prio                      uint8
	fn                        func(context.Context) error
	ctx                       context.Context
	err                       error
	submitted, started, ended time.Duration
	done                      atomic.Bool
	mu                        sync.Mutex
	ch                        chan struct{} // made by a waiter, guarded by mu
	_                         [32]byte
}

var floorEpoch = time.Now()

// Submit runs fn at priority prio once the tasks before it have run.
// Priority 0 is the highest.
func (l *floorLine) Submit(ctx context.Context, prio uint8, fn func(context.Context) error) *floorTask {
	t := &floorTask{prio: prio, fn: fn, ctx: ctx, submitted: time.Since(floorEpoch)}
	l.mu.Lock()
	if !l.running {
		l.running = true
		l.mu.Unlock()
		go l.run(t)
		return t
	}
	q := &l.lists[prio]
	if q.t == nil {
		q.h = t
	} else {
		q.t.next = t
	}
	q.t = t
	l.full |= 1 << prio
	l.mu.Unlock()
	return t
}

// run runs t, then each task served next, until none waits.
func (l *floorLine) run(t *floorTask) {
	for t != nil {
		t.started = time.Since(floorEpoch)
		t.err = t.fn(t.ctx)
		t.ended = time.Since(floorEpoch)
		t.complete()
		t = l.next()
	}
}

func (l *floorLine) next() *floorTask {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.full == 0 {
		l.running = false
		return nil
	}
	p := bits.TrailingZeros8(l.full)
	q := &l.lists[p]
	t := q.h
	q.h, t.next = t.next, nil
	if q.h == nil {
		q.t = nil
		l.full &^= 1 << p
	}
	return t
}

func (t *floorTask) complete() {
	t.mu.Lock()
	t.done.Store(true)
	if t.ch != nil {
		close(t.ch)
	}
	t.mu.Unlock()
}

// Wait returns once t has run.
func (t *floorTask) Wait() {
	if t.done.Load() {
		return
	}
	t.mu.Lock()
	if t.done.Load() {
		t.mu.Unlock()
		return
	}
	if t.ch == nil {
		t.ch = make(chan struct{})
	}
	ch := t.ch
	t.mu.Unlock()
	<-ch
}
