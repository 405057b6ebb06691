package groupstate

// fairOrder holds the groups with a waiting task in the fair line's order.
// Fewest running per weight come first, then the oldest head
// (fairEntry.less). It is a heap, so a pop and a re-entry cost O(log n).
//
// Tiers of groups by running count once stood in front of the heap, to
// move a group in O(1). BenchmarkFairLine/mode=fair was no faster with
// them at -cpu 2 and slower at -cpu 1 (benchmarks/RESULTS.md). So the heap
// alone keeps the order.
type fairOrder[T any] struct {
	heap fairHeap[T]
}

// joinedBefore reports whether the waiter that joined with seq a joined
// before the one with b. Seqs wrap, and they are at most 2^31 joins apart.
func joinedBefore(a, b uint32) bool { return int32(a-b) < 0 }

func (o *fairOrder[T]) len() int { return len(o.heap) }

// first returns the fairest group. o is not empty.
func (o *fairOrder[T]) first() *Group[T] { return o.heap[0].g }

// add puts g, which now has a waiter, in its place.
func (o *fairOrder[T]) add(g *Group[T]) { o.heap.push(g) }

// remove takes g out.
func (o *fairOrder[T]) remove(g *Group[T]) { o.heap.remove(g.fair.index) }

// fix moves g to its place after its running count, weight or head changed.
func (o *fairOrder[T]) fix(g *Group[T]) { o.heap.fix(g.fair.index) }
