package groupstate

import "sync/atomic"

// slots bounds how many tasks may wait: a count of slots taken against a
// limit that may change. A lowered limit takes no slot back.
//
// Callers that would rather wait for a slot than be turned away (blocking
// submissions) wait in a line of their own, made on first need: the line
// protocol of line, with slots for permits. A slot given back while a
// caller waits passes straight to the first of them, in order of priority
// and then of arrival, and a task that does not wait never takes a slot
// while one does, so nothing barges past a waiting caller.
//
// A group's slots are one counter, not a padded permits: every group has
// one (BenchmarkGroupFootprint). The global queue's, one per executor and
// touched by every waiting task, are wide: taken and given on lines of
// their own, as a layer's permits (BenchmarkW2Groups1000/peer=groupconc-user).
type slots[T any] struct {
	limit   atomic.Int64
	held    atomic.Int64 // unless wide
	wide    *permits
	blocked atomic.Pointer[line[T]] // callers waiting for a slot; only its list, lock and waiting count are used
}

func newSlots[T any](limit int) *slots[T] {
	s := new(slots[T])
	s.limit.Store(int64(limit))
	return s
}

func newWideSlots[T any](limit int) *slots[T] {
	s := newSlots[T](limit)
	s.wide = new(permits)
	return s
}

// load returns the slots taken.
func (s *slots[T]) load() int64 {
	if s.wide != nil {
		return s.wide.load()
	}
	return s.held.Load()
}

// take takes a slot for a task that would rather be turned away than wait
// for one: never while a caller waits for one.
func (s *slots[T]) take() bool {
	if b := s.blocked.Load(); b != nil && b.waiting.Load() != 0 {
		return false
	}
	return s.takeFree()
}

// takeFree takes a free slot, waiting callers or not.
func (s *slots[T]) takeFree() bool {
	if s.wide != nil {
		return s.wide.take(s.limit.Load())
	}
	for {
		h := s.held.Load()
		if h >= s.limit.Load() {
			return false
		}
		if s.held.CompareAndSwap(h, h+1) {
			return true
		}
	}
}

func (s *slots[T]) giveFree() {
	if s.wide != nil {
		s.wide.give(1)
		return
	}
	s.held.Add(-1)
}

// give gives back a slot. It returns the waiting callers handed a slot,
// taken out of their line and chained by next: the caller owns them now,
// and wakes them. The interleaving with block is line.release's with join.
func (s *slots[T]) give() *waiter[T] {
	b := s.blocked.Load()
	if b == nil || b.waiting.Load() == 0 {
		s.giveFree()
		if b = s.blocked.Load(); b == nil || b.waiting.Load() == 0 {
			return nil
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		return s.grantLocked(b)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.head; w != nil && s.load() <= s.limit.Load() {
		b.removeLocked(w)
		return w
	}
	s.giveFree()
	return s.grantLocked(b)
}

// block takes a slot for w's caller at once if one is free and nobody
// waits for one, and reports true; otherwise it puts w in the line of
// waiting callers, by priority and then arrival, and reports false: the
// line owns w now, until give hands it a slot or w leaves.
func (s *slots[T]) block(w *waiter[T]) (acquired bool) {
	b := s.blocked.Load()
	if b == nil {
		s.blocked.CompareAndSwap(nil, new(line[T]))
		b = s.blocked.Load()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiting.Add(1) // before takeFree: a give after this sees a waiter
	if b.head == nil && s.takeFree() {
		b.waiting.Add(-1)
		return true
	}
	b.appendLocked(w)
	return false
}

// setLimit changes the limit; a raised one hands the slots it frees to
// waiting callers, returned as give returns them.
func (s *slots[T]) setLimit(n int) *waiter[T] {
	s.limit.Store(int64(n))
	b := s.blocked.Load()
	if b == nil || b.waiting.Load() == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return s.grantLocked(b)
}

func (s *slots[T]) grantLocked(b *line[T]) *waiter[T] {
	var c chain[T]
	for w := b.head; w != nil && s.takeFree(); w = b.head {
		b.removeLocked(w)
		c.add(w)
	}
	return c.head
}
