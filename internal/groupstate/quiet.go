package groupstate

// This file is about the cause a blocked caller waits for, and the quiet
// release that wakes only callers of that cause.
//
// A blocked caller's walk that is turned away gives back what it took.
// Another walk may have been turned away at one of those permits, held for
// a moment. Its caller must be woken: no other release may come. But a
// caller that waits for the limit this walk was turned away at must not
// be. Two such callers would wake each other for ever while a long task
// holds that limit. Each walk would take and give back a permit before it.
// So a blocked caller keeps the layer it was turned away at: its cause.
// Such a release wakes only a caller of the layers it gave back
// (slots.quiet).

// Bits of Permits.bit naming a blocked caller's cause, beside its slot.
// They are none of a layer's bits (see leaveFrom).
const (
	causeShift = 5
	causeBits  = 3 << causeShift
)

// causeOf returns the cause bits of the layer bit: 0 for none of a layer's
// (a walk turned away at a pause line).
func causeOf(bit uint8) uint8 {
	switch bit {
	case heldGlobal:
		return 1 << causeShift
	case heldBulkhead:
		return 2 << causeShift
	case heldConc:
		return 3 << causeShift
	}
	return 0
}

// turnedAway records, in p.bit, the layer bit whose line turned p's walk
// away. The slot bit of the queue p's caller last blocked on stays, for
// its door (takeDoor).
func (p *Permits[T]) turnedAway(bit uint8) {
	p.bit = p.bit&^causeBits | causeOf(bit)
}

// causes returns the set of causes, one bit each, of the layer bits in
// mask.
func causes(mask uint8) uint64 {
	var set uint64
	for _, b := range [...]uint8{heldGlobal, heldBulkhead, heldConc} {
		if mask&b != 0 {
			set |= 1 << (causeOf(b)>>causeShift - 1)
		}
	}
	return set
}

// causes returns the set of causes of p, a blocked caller: none, or one.
func (p *Permits[T]) causes() uint64 {
	if c := p.bit & causeBits; c != 0 {
		return 1 << (c>>causeShift - 1)
	}
	return 0
}

// quiet is nudge for the permits of the layers in mask, given back by a
// blocked caller's walk turned away further on. It counts one quiet
// release for each layer. A caller of that cause about to block sees it
// (block). It wakes the first waiting caller of one of those causes, with
// the door, and returns it as nudge does. While the door is held, it
// leaves that to the door's holder (pending).
func (s *slots[T]) quiet(mask uint8) *Permits[T] {
	if s.limit.Load() != 0 {
		return nil
	}
	set := causes(mask)
	for c := range 3 {
		if set&(1<<c) != 0 {
			s.freed.Add(aQuiet << (countBits * c))
		}
	}
	if s.waiting.Load() == 0 {
		return nil
	}
	r := s.lock()
	defer r.unlock()
	if s.freed.Load()&doorHeld != 0 {
		s.freed.Or(set << pendingShift)
		return nil
	}
	return s.causedLocked(r.q(), set)
}

// causedLocked takes the first waiting caller of a cause in set out of
// line, with the door, and returns it as nudge does. The door is free.
func (s *slots[T]) causedLocked(q queue[T], set uint64) *Permits[T] {
	var first *Permits[T]
	q.each(nil, func(w *Permits[T]) {
		if first == nil && w.causes()&set != 0 {
			first = w
		}
	})
	if first == nil {
		return nil
	}
	s.removeLocked(q, first)
	s.freed.Or(doorHeld)
	first.flags |= nudged
	return first
}

// pendingLocked is for the door coming free with no one to hand it to. It
// wakes the first caller of a cause given back quietly while the door was
// held (see quiet), and returns it as nudge does.
func (s *slots[T]) pendingLocked(q queue[T]) *Permits[T] {
	set := s.freed.Load() >> pendingShift & pendingBits
	if set == 0 || s.limit.Load() != 0 {
		return nil
	}
	s.freed.And(^(pendingBits << pendingShift))
	return s.causedLocked(q, set)
}

// quietSince reports whether a permit of w's cause was given back quietly
// since seen, read from nudges before w's walk.
func (s *slots[T]) quietSince(w *Permits[T], seen uint64) bool {
	c := w.bit & causeBits
	if c == 0 {
		return false
	}
	shift := quietShift + countBits*(c>>causeShift-1)
	return (s.freed.Load()^seen)>>shift&countMask != 0
}
