package groupstate

import (
	"sync"
	"sync/atomic"
)

// Under fair share a group's queue threshold counts its tasks waiting for
// a global permit too. So a caller blocked on a group's queue of no slots
// may wait for a global permit, which a task of any group gives back.
// That group's own release nudges only its own queue. So the callers that
// may wait so are watched: the queues they block on are listed, and every
// global permit given back, or freed by an adaptive cap raised, nudges
// them. UpdatePolicy needs no watch: it nudges every group's queue.

// watched lists the group queues whose callers are watched.
type watched[T any] struct {
	n  atomic.Int64 // callers watched, all queues
	mu sync.Mutex
	qs map[*slots[T]]int // guarded by mu: callers watched per queue
}

// Watch is a caller's watch of its group's queue (see WatchGlobal). Its
// zero value watches nothing.
type Watch[T any] struct {
	gl *Global[T]
	q  *slots[T]
}

// WatchGlobal has every global permit given back nudge the task's group
// queue from now on, until Stop, if the caller may wait there for one. It
// reports false if it need not: not under fair share, or the queue has
// slots (a slot comes free as a waiting task starts). Call it when the
// caller's walk was turned away by that queue. Then walk again, reading
// Nudges anew, before any Block. A permit given back before the watch
// began is then seen by that walk, and one given back after by the watch.
// A queue's threshold lowered to 0 later nudges its callers, who then
// watch.
func (p *Permits[T]) WatchGlobal() (Watch[T], bool) {
	gl := p.group.global
	q := &p.group.queue
	if !gl.fair || q.limit.Load() != 0 {
		return Watch[T]{}, false
	}
	w := &gl.watch
	w.mu.Lock()
	if w.qs == nil {
		w.qs = map[*slots[T]]int{}
	}
	w.qs[q]++
	w.n.Add(1) // after the queue is listed: see nudgeWatched
	w.mu.Unlock()
	return Watch[T]{gl, q}, true
}

// Stop ends the watch. It may be called more than once.
//
// A caller that blocked while its queue had slots watches nothing. After
// the threshold fell to 0, only the first caller walked again, and
// watches. So the last watcher of a queue to stop nudges it: its first
// caller walks again, and watches.
func (wa *Watch[T]) Stop() {
	if wa.gl == nil {
		return
	}
	w := &wa.gl.watch
	w.mu.Lock()
	last := false
	if w.qs[wa.q]--; w.qs[wa.q] <= 0 {
		delete(w.qs, wa.q)
		last = true
	}
	w.n.Add(-1)
	w.mu.Unlock()
	if last {
		wa.gl.handSlots(wa.q.nudge(), 0)
	}
	wa.gl = nil
}

// nudgeWatched nudges every watched queue but skip, after a global permit
// was given back or a raised limit freed some. Each queue of no slots
// wakes its first caller, whose task may start now (see slots.nudge).
// Release nudges the releasing task's own queue already: that is skip.
// A quiet release wakes only a caller turned away at the global layer
// (see quiet.go).
//
// Interleaving: the permit is free before n is read. A watcher counts
// itself in n before it reads its queue's nudges and walks again. So
// either its walk finds the permit free, or this sees it and nudges its
// queue, which its Block then sees.
func (gl *Global[T]) nudgeWatched(skip *slots[T], quiet bool) {
	w := &gl.watch
	if w.n.Load() == 0 {
		return
	}
	var buf [8]*slots[T]
	qs := buf[:0]
	w.mu.Lock()
	for q := range w.qs {
		if q != skip {
			qs = append(qs, q)
		}
	}
	w.mu.Unlock()
	for _, q := range qs {
		if quiet {
			gl.handSlots(q.quiet(heldGlobal), 0)
		} else {
			gl.handSlots(q.nudge(), 0)
		}
	}
}
