package groupstate

import "math/bits"

// fairHeap orders the groups with a waiting task. Fewest running per
// weight come first, then the oldest head. Each entry holds a copy of its
// group's key, refreshed whenever the group is placed. So sifting reads
// one contiguous slice rather than a group per comparison. Entries move
// into holes, writing each moved group's index once.
type fairHeap[T any] []fairEntry[T]

type fairEntry[T any] struct {
	running, weight int64
	seq             uint32 // the head's
	g               *Group[T]
}

func (e *fairEntry[T]) load(g *Group[T]) {
	q := g.fair
	e.running, e.weight, e.seq, e.g = q.running.Load(), q.weight.Load(), q.seq, g
}

// less reports whether a goes before b. That is a.running/a.weight <
// b.running/b.weight, exactly, in 128 bits. Then the older head goes
// first.
func (a *fairEntry[T]) less(b *fairEntry[T]) bool {
	if a.weight == b.weight {
		if a.running != b.running {
			return a.running < b.running
		}
	} else {
		ahi, alo := bits.Mul64(uint64(a.running), uint64(b.weight))
		bhi, blo := bits.Mul64(uint64(b.running), uint64(a.weight))
		if ahi != bhi {
			return ahi < bhi
		}
		if alo != blo {
			return alo < blo
		}
	}
	return joinedBefore(a.seq, b.seq)
}

// push adds g, which has a waiter now.
func (h *fairHeap[T]) push(g *Group[T]) {
	*h = append(*h, fairEntry[T]{})
	(*h)[len(*h)-1].load(g)
	h.up(len(*h) - 1)
}

// remove takes out the entry at i.
func (h *fairHeap[T]) remove(i int) {
	old := *h
	n := len(old) - 1
	old[i].g.fair.index = -1
	if i != n {
		old.put(i, old[n])
	}
	old[n] = fairEntry[T]{}
	*h = old[:n]
	if i != n && !h.up(i) {
		h.down(i)
	}
}

// fix refreshes the key of the entry at i and moves it to its place.
func (h fairHeap[T]) fix(i int) {
	h[i].load(h[i].g)
	if !h.up(i) {
		h.down(i)
	}
}

// up moves the entry at i towards the root while it goes before its
// parent, and reports whether it moved.
func (h fairHeap[T]) up(i int) bool {
	e := h[i]
	start := i
	for i > 0 {
		p := (i - 1) / 2
		if !e.less(&h[p]) {
			break
		}
		h.put(i, h[p])
		i = p
	}
	h.put(i, e)
	return i != start
}

// down moves the entry at i away from the root while a child goes first.
func (h fairHeap[T]) down(i int) {
	e := h[i]
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].less(&h[c]) {
			c = r
		}
		if !h[c].less(&e) {
			break
		}
		h.put(i, h[c])
		i = c
	}
	h.put(i, e)
}

// put places e at i and tells its group where it is.
func (h fairHeap[T]) put(i int, e fairEntry[T]) {
	h[i] = e
	e.g.fair.index = i
}
