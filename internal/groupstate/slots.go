package groupstate

import "sync/atomic"

// slots bounds how many tasks may wait: a count of slots taken against a
// limit that may change. It is only ever tried, never waited on, so "is a
// slot free" is exact. A lowered limit takes no slot back.
//
// A group's slots are one counter, not a padded permits: every group has
// one (BenchmarkGroupFootprint: 1 024 B per group, 1 218 B with permits).
// The global queue's, one per executor and touched by every waiting task,
// are wide: taken and given on lines of their own, as a layer's permits
// (BenchmarkW2Groups1000/peer=groupconc-user).
type slots struct {
	limit atomic.Int64
	held  atomic.Int64 // unless wide
	wide  *permits
}

func newSlots(limit int) *slots {
	s := new(slots)
	s.limit.Store(int64(limit))
	return s
}

func newWideSlots(limit int) *slots {
	s := newSlots(limit)
	s.wide = new(permits)
	return s
}

// load returns the slots taken.
func (s *slots) load() int64 {
	if s.wide != nil {
		return s.wide.load()
	}
	return s.held.Load()
}

func (s *slots) take() bool {
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

func (s *slots) give() {
	if s.wide != nil {
		s.wide.give(1)
		return
	}
	s.held.Add(-1)
}
