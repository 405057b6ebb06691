package groupstate

import "math/bits"

// fairOrder holds the groups with a waiting task in the fair line's order.
// Fewest running per weight come first, then the oldest head
// (fairEntry.less).
//
// While every such group has one weight and fewer than maxTiers running,
// the order is tiers. There is one list per running count, each in the
// order its groups' heads joined. A group enters its tier at either end or
// a few places from the tail, since a head that just joined is the newest.
// So a pop and a re-entry cost O(1) where the heap pays O(log n). W2 of
// the benchmarks module at one CPU, where the order serves most hand-offs,
// is faster with the tiers than with the heap alone. When a group does not
// fit that shape, or its place lies more than maxScan from its tier's
// tail, every group moves to the heap. The heap then keeps them until none
// is left.
type fairOrder[T any] struct {
	heaped bool
	full   uint64 // bit r set: tiers[r] has a group
	n      int    // groups in tiers
	weight int64  // the weight of every group in tiers
	tiers  [maxTiers]tier[T]
	heap   fairHeap[T]
}

const (
	maxTiers = 64
	maxScan  = 8
)

type tier[T any] struct{ head, tail *Group[T] }

// joinedBefore reports whether the waiter that joined with seq a joined
// before the one with b. Seqs wrap, and they are at most 2^31 joins apart.
func joinedBefore(a, b uint32) bool { return int32(a-b) < 0 }

func (o *fairOrder[T]) len() int {
	if o.heaped {
		return len(o.heap)
	}
	return o.n
}

// first returns the fairest group. o is not empty.
func (o *fairOrder[T]) first() *Group[T] {
	if o.heaped {
		return o.heap[0].g
	}
	return o.tiers[bits.TrailingZeros64(o.full)].head
}

// add puts g, which now has a waiter, in its place.
func (o *fairOrder[T]) add(g *Group[T]) {
	if !o.heaped {
		if o.n == 0 {
			o.weight = g.fair.weight.Load()
		}
		if o.tierAdd(g) {
			return
		}
		o.toHeap()
	}
	o.heap.push(g)
}

// remove takes g out.
func (o *fairOrder[T]) remove(g *Group[T]) {
	if !o.heaped {
		o.tierRemove(g)
		return
	}
	o.heap.remove(g.fair.index)
	o.heaped = len(o.heap) != 0
}

// fix moves g to its place after its running count, weight or head changed.
func (o *fairOrder[T]) fix(g *Group[T]) {
	if o.heaped {
		o.heap.fix(g.fair.index)
		return
	}
	o.tierRemove(g)
	o.add(g)
}

// tierAdd links g into its tier and reports whether it fits there.
func (o *fairOrder[T]) tierAdd(g *Group[T]) bool {
	q := g.fair
	r := q.running.Load()
	if q.weight.Load() != o.weight || uint64(r) >= maxTiers {
		return false
	}
	t := &o.tiers[r]
	seq := q.seq
	var prev *Group[T] // g goes after prev; nil: first
	if t.head != nil && !joinedBefore(seq, t.head.fair.seq) {
		prev = t.tail
		for i := 0; joinedBefore(seq, prev.fair.seq); i++ {
			if i == maxScan {
				return false
			}
			prev = prev.fair.prev
		}
	}
	q.prev = prev
	if prev == nil {
		q.next, t.head = t.head, g
	} else {
		q.next, prev.fair.next = prev.fair.next, g
	}
	if q.next == nil {
		t.tail = g
	} else {
		q.next.fair.prev = g
	}
	q.tier = int(r)
	o.full |= 1 << r
	o.n++
	return true
}

func (o *fairOrder[T]) tierRemove(g *Group[T]) {
	q := g.fair
	t := &o.tiers[q.tier]
	if q.prev == nil {
		t.head = q.next
	} else {
		q.prev.fair.next = q.next
	}
	if q.next == nil {
		t.tail = q.prev
	} else {
		q.next.fair.prev = q.prev
	}
	if t.head == nil {
		o.full &^= 1 << q.tier
	}
	q.prev, q.next, q.tier = nil, nil, -1
	o.n--
}

// toHeap moves every group from the tiers to the heap. The tiers, lowest
// first, are already in heap order, so no push sifts.
func (o *fairOrder[T]) toHeap() {
	for o.n > 0 {
		g := o.first()
		o.tierRemove(g)
		o.heap.push(g)
	}
	o.heaped = true
}
