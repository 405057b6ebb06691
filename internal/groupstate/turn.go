package groupstate

import (
	"sync"
	"sync/atomic"
)

// A task handed a permit is carried on through its later layers by its
// releaser's goroutine. Two tasks of a group handed permits by two
// releases are carried on two goroutines. The second handed could reach
// their group's next layer first, and take its free permit. So it would
// start ahead of the first, against the contract's order.
//
// So a group's handed tasks walk on in turn, in the order they were
// handed. A task handed a permit while another of its group walks on
// waits, out of every line, until that walk stops. Then the walker's
// owner carries it on (Resume). A walk never blocks, so the wait is short.
//
// Interleaving: a task is handed, and takes its turn or waits for it,
// under the lock of the line that hands it. So the turns go in the order
// each line serves. The walker gives up its turn only once its walk has
// stopped: it holds every permit, or waits in a line, or was turned away.
// A task walking on after it finds that line's waiters, and waits behind.

// turns is the turn of a group's handed tasks. A group makes it the first
// time one of its tasks is handed a permit.
type turns[T any] struct {
	n      atomic.Int64 // the walker and the tasks waiting for their turn
	mu     sync.Mutex   // guards parked, and n above 1
	parked list[T]      // tasks waiting for their turn, through their line links
}

// turn returns g's turns, made on first need.
func (g *Group[T]) turn() *turns[T] {
	t := g.turns.Load()
	if t == nil {
		t = new(turns[T])
		if !g.turns.CompareAndSwap(nil, t) {
			t = g.turns.Load()
		}
	}
	return t
}

// takeTurn gives w, just handed a permit, its group's turn to walk on, and
// reports true. If another task has it, w waits for its turn, and it
// reports false. Nobody owns w then until its turn comes (passTurn).
func (w *Permits[T]) takeTurn() bool {
	t := w.group.turn()
	if t.n.CompareAndSwap(0, 1) {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n.Add(1) == 1 { // the walker gave it up meanwhile
		return true
	}
	t.parked.pushTail(w)
	return false
}

// tryTurn gives w its group's turn if nobody has it, and reports whether
// it did. It never makes w wait.
func (w *Permits[T]) tryTurn() bool { return w.group.turn().n.CompareAndSwap(0, 1) }

// passTurn ends the turn of g's walker. It returns the task whose turn it
// is now, for the caller to carry on, or nil.
func (g *Group[T]) passTurn() *Permits[T] {
	t := g.turns.Load()
	if t.n.CompareAndSwap(1, 0) {
		return nil
	}
	// More than one: each waiting task was counted and parked under mu.
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.parked.popHead()
	t.n.Add(-1)
	return w
}
