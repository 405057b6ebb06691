package groupstate

import "math/bits"

// Under fair share, a layer that groups of groups share chooses among
// those with work waiting by share: the one that holds the fewest permits
// per weight. Two layers do: the global line in tree mode (fairtree.go),
// among a parent's children and its own tasks at each level, and a
// parent's own layers (kidQueue), among its children's buckets. Both keep
// those with work in a sharers list, in the order they got it, and choose
// with fairest.

// sharer is what a sharers list holds: a group in the fair tree, or a
// bucket of a kidQueue.
type sharer[S any] interface {
	comparable
	// shareLink returns its links in the list it stands in.
	shareLink() *shareLink[S]
	// share returns the permits it holds at the shared layer, and its
	// weight.
	share() (held, weight int64)
}

type shareLink[S any] struct{ prev, next S }

// sharers lists sharers with work, in the order they got it.
type sharers[S sharer[S]] struct{ head, tail S }

func (l *sharers[S]) push(s S) {
	var none S
	n := s.shareLink()
	n.prev, n.next = l.tail, none
	if l.tail != none {
		l.tail.shareLink().next = s
	} else {
		l.head = s
	}
	l.tail = s
}

// pushFront lists s first.
func (l *sharers[S]) pushFront(s S) {
	var none S
	n := s.shareLink()
	n.prev, n.next = none, l.head
	if l.head != none {
		l.head.shareLink().prev = s
	} else {
		l.tail = s
	}
	l.head = s
}

func (l *sharers[S]) remove(s S) {
	var none S
	n := s.shareLink()
	if n.prev != none {
		n.prev.shareLink().next = n.next
	} else {
		l.head = n.next
	}
	if n.next != none {
		n.next.shareLink().prev = n.prev
	} else {
		l.tail = n.prev
	}
	n.prev, n.next = none, none
}

// fairest returns the sharer of l that holds the fewest permits per
// weight. A candidate own, unless it is the zero S, holding held at weight
// weight, stands before the list. The first in that order wins a tie. So
// the scan stops at the first that holds none (or fewer: a count read
// between a release and the take it follows).
func (l *sharers[S]) fairest(own S, held, weight int64) S {
	var none S
	best := own
	for s := l.head; s != none; s = s.shareLink().next {
		if best != none && held <= 0 {
			break // none holds fewer than none
		}
		h, w := s.share()
		// Equal weights compare the counts alone (held > 0 here, so an h
		// below 0, which counts as 0, is fewer too). That is most choices,
		// and fewer's products were about 40 % of the choice
		// (BenchmarkFairLine, mode=fair/shape=tree).
		if best == none || w == weight && h < held || w != weight && fewer(h, w, held, weight) {
			best, held, weight = s, h, w
		}
	}
	return best
}

// fewer reports whether a/aw < b/bw, exactly.
func fewer(a, aw, b, bw int64) bool {
	hi1, lo1 := bits.Mul64(uint64(max(a, 0)), uint64(bw))
	hi2, lo2 := bits.Mul64(uint64(max(b, 0)), uint64(aw))
	return hi1 < hi2 || hi1 == hi2 && lo1 < lo2
}
