package groupstate

import "sync/atomic"

// slots bounds how many tasks may wait: a count of slots taken against a
// limit that may change. A lowered limit takes no slot back.
//
// It is a line whose permits are slots and whose waiters are callers that
// would rather wait for a slot than be turned away (blocking submissions):
// a slot given back while a caller waits passes straight to the first of
// them, in order of priority and then of arrival, and a task that does not
// wait never takes a slot while one does (tryAcquire), so nothing barges
// past a waiting caller.
//
// A group's slots are one counter, not wide: every group has one
// (BenchmarkGroupFootprint). The global queue's, one per executor and
// touched by every waiting task, are wide (BenchmarkW2Groups1000/peer=groupconc-user).
//
// Like every line's, its lobby is made on first need (see lobby).
type slots[T any] struct {
	line[T]
	freed atomic.Uint64 // nudges so far (see nudge)
}

// load returns the slots taken.
func (s *slots[T]) load() int64 { return s.held.load() }

// give gives back a slot. It returns the waiting callers handed a slot,
// taken out of their line and chained by next: the caller owns them now,
// and wakes them.
func (s *slots[T]) give() *Permits[T] { return s.release(nil) }

// block takes a slot for w's caller at once if one is free and nobody
// waits for one, and reports acquired; or, for a queue of no slots, reports
// retry if a nudge came since the caller read seen (its task may start at
// once now); otherwise it puts w in the line of waiting callers, by
// priority and then arrival (a caller nudged before goes back to the head
// of its priority), and reports neither: the line owns w now, until give
// or nudge hands it on, or w leaves.
func (s *slots[T]) block(w *Permits[T], seen uint64) (acquired, retry bool) {
	r := s.lock()
	defer r.unlock()
	q := r.q()
	if s.enterLocked(q) {
		return true, false
	}
	// Interleaving: a nudge adds to freed before it looks for waiters.
	if q.empty() && s.limit.Load() == 0 && s.freed.Load() != seen {
		s.withdrawLocked()
		return false, true
	}
	front := w.flags&nudged != 0
	w.flags &^= nudged
	s.pushLocked(q, w, front)
	return false, false
}

// nudge, for a queue of no slots, takes the first waiting caller out of
// line, without a slot, to be woken: a permit was just given back, and its
// task may start on it at once. No slot ever frees in such a queue, so
// this is what ends such a wait. It returns the caller as give does.
func (s *slots[T]) nudge() *Permits[T] {
	if s.limit.Load() != 0 {
		return nil
	}
	s.freed.Add(1)
	if s.waiting.Load() == 0 {
		return nil
	}
	r := s.lock()
	defer r.unlock()
	q := r.q()
	if q.empty() {
		return nil
	}
	w := s.popLocked(q)
	w.flags |= nudged
	return w
}

// handOut hands the slots a raised limit frees to waiting callers,
// returned as give returns them. A change of limits calls it in its last
// pass (see limits.go), once every layer's new limit is in force: a caller
// woken earlier could walk through a layer whose lowered limit is not
// stored yet.
func (s *slots[T]) handOut() *Permits[T] {
	if s.waiting.Load() == 0 {
		return nil
	}
	return s.grant()
}
