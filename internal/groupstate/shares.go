package groupstate

import (
	"math/bits"
	"sync/atomic"
)

// Under fair share, a layer that groups of groups share chooses among
// those with work waiting by share: the one that holds the fewest permits
// per weight. Two layers do: the global line in tree mode (fairtree.go),
// among a parent's children and its own tasks at each level, and a
// parent's own layers (kidQueue), among its children's buckets. Both keep
// those with work in a sharers list, oldest waiter first, and choose with
// fairest. So a tie goes to the sharer whose waiter has waited longest, as
// in the flat fair line.

// shareLink is a sharer's place in a sharers list, and where its share is
// read. That is the permits it holds at the shared layer (held, plus more
// where it counts them in two parts), and its weight. The choice reads them
// from the links it passes. Read through methods of the sharer, each link
// it passed cost two calls through the generic dictionary: 8 % more time a
// task in BenchmarkFairLine, mode=fair/shape=tree.
type shareLink[S comparable] struct {
	prev, next *shareLink[S]
	of         S // the sharer: a group in the fair tree, or a kidQueue's bucket
	held, more *atomic.Int64
	weight     *atomic.Int64
	oldest     uint32 // the seq its oldest waiter joined the layer with
}

// noMore is the more of a sharer that counts its permits in one part.
var noMore atomic.Int64

// share returns the permits the sharer holds, and its weight.
func (n *shareLink[S]) share() (held, weight int64) {
	return n.held.Load() + n.more.Load(), n.weight.Load()
}

// sharers lists sharers with work, oldest waiter first (shareLink.oldest).
type sharers[S comparable] struct{ head, tail *shareLink[S] }

// add lists n at its place. It looks from the tail, since a sharer's
// oldest waiter is mostly among the last to join.
func (l *sharers[S]) add(n *shareLink[S]) {
	at := l.tail
	for at != nil && joinedBefore(n.oldest, at.oldest) {
		at = at.prev
	}
	n.prev = at
	if at != nil {
		n.next, at.next = at.next, n
	} else {
		n.next, l.head = l.head, n
	}
	if n.next != nil {
		n.next.prev = n
	} else {
		l.tail = n
	}
}

// pushFront lists n first. Its oldest waiter joined before every other's.
func (l *sharers[S]) pushFront(n *shareLink[S]) {
	n.prev, n.next = nil, l.head
	if l.head != nil {
		l.head.prev = n
	} else {
		l.tail = n
	}
	l.head = n
}

func (l *sharers[S]) remove(n *shareLink[S]) {
	if n.prev != nil {
		n.prev.next = n.next
	} else {
		l.head = n.next
	}
	if n.next != nil {
		n.next.prev = n.prev
	} else {
		l.tail = n.prev
	}
	n.prev, n.next = nil, nil
}

// update lists n, whose oldest waiter joined with seq oldest, at its
// place, or takes it out if it has none (has false). It reports whether
// the list changed.
func (l *sharers[S]) update(n *shareLink[S], has bool, oldest uint32) bool {
	in := l.head == n || n.prev != nil
	switch {
	case !has && !in, has && in && n.oldest == oldest:
		return false
	case in:
		l.remove(n)
	}
	if has {
		n.oldest = oldest
		l.add(n)
	}
	return true
}

// fairest returns the sharer of l, which is not empty, that holds the
// fewest permits per weight. The first in order wins a tie. So the scan
// stops at the first that holds none (or fewer: a count read between a
// release and the take it follows).
func (l *sharers[S]) fairest() S {
	n := l.head
	best := n.of
	held, weight := n.share()
	for n = n.next; n != nil && held > 0; n = n.next {
		h, w := n.share()
		// Equal weights compare the counts alone (held > 0 here, so an h
		// below 0, which counts as 0, is fewer too). That is most choices,
		// and fewer's products were about 40 % of the choice
		// (BenchmarkFairLine, mode=fair/shape=tree).
		if w == weight && h < held || w != weight && fewer(h, w, held, weight) {
			best, held, weight = n.of, h, w
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
