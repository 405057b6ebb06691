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
// So a group's handed tasks walk on in turn. A task handed a permit while
// another of its group walks on waits, out of every line, until that walk
// stops. Then the walker's owner carries it on (Resume). A walk never
// blocks, so the wait is short.
//
// A fresh walk (Try) could take that free permit too, ahead of tasks
// handed one before it was submitted. So it takes no free permit of a
// layer a task of its group may yet come to (yields), but one that leaves
// the walker's free where only its group takes them (takeBeside). It
// waits for its turn there as a handed task does
// (waitTurn), holding a queue slot, as a task that waits in a line does.
// Tasks waiting for their turn go in the order lines serve: priority,
// then age (compareAge). A fresh walk that finds others waiting in the
// layer's line waits for its turn even so if a task of its group may yet
// join that line behind it. One waits for its turn, or the walker was
// handed a permit of an earlier layer (yields). A walker handed this
// layer's permit, or a later one's, is past it.
//
// Interleaving: a task is handed, and takes its turn or waits for it,
// under the lock of the line that hands it, before it leaves the line's
// count of waiters. So a fresh walk that finds nobody waiting there, as
// the task was just handed, finds the turn taken. The walker gives up its
// turn only once its walk has stopped. It then holds every permit, or
// waits in a line, or was turned away. A task walking on after it finds that
// line's waiters, and waits behind.

// turns is the turn of a group's handed tasks. A group makes it the first
// time one of its tasks is handed a permit.
type turns[T any] struct {
	// n counts the walker and the tasks waiting for their turn, in its low
	// 32 bits. The high ones are where the walker was handed its permit,
	// or 0 if not known, and its cost (turnAt). It is one word, so that
	// yields reads them all at once.
	n      atomic.Uint64
	mu     sync.Mutex  // guards parked, and n's count above 1
	parked list[T]     // tasks waiting for their turn, through their line links
	last   *Permits[T] // the task parked last, while it is parked (see park)
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
	t, at := w.group.turn(), w.turnAt()
	if t.n.CompareAndSwap(0, at|1) {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		n := t.n.Load()
		if n&turnCount == 0 { // the walker gave it up meanwhile
			if t.n.CompareAndSwap(n, at|1) {
				return true
			}
			continue
		}
		if t.n.CompareAndSwap(n, n+1) {
			t.park(w)
			return false
		}
	}
}

// turnCount masks the count of turns.n.
const turnCount = 1<<32 - 1

// turnAt returns where w was handed a permit, and its cost, as turns.n's
// high bits. The place holds the layer's place in the walk, then the
// level. A task waiting for its turn with none handed (turnBit) gives 0,
// as if before every layer. The cost is capped (turnCostMax).
func (w *Permits[T]) turnAt() uint64 {
	x, c := w.x(), uint64(1)
	if x != nil && x.amt != nil {
		c = uint64(min(x.amt.cost, turnCostMax))
	}
	c <<= turnCostShift
	for i, y := range w.group.global.walk {
		if y.bit == w.bit {
			return turnPos(i, x.lvl()) | c
		}
	}
	return c
}

// turnPos is the place of the layer at i, level lv, of a walk, as turnAt.
func turnPos(i int, lv uint8) uint64 { return (uint64(i+1)<<8 | uint64(lv)) << 32 }

// The walker's place and cost in turns.n. A cost of turnCostMax or more
// reads as more than any limit (yields).
const (
	turnPlace     = 1<<48 - 1<<32
	turnCostShift = 48
	turnCostMax   = 1<<16 - 1
)

// turnBit is Permits.bit for a fresh walk waiting for its turn: it was
// handed nothing.
const turnBit uint8 = 1 << 6

// contested reports whether a fresh walk of g leaves l's free permits to
// the tasks of g walking on from hand-offs: whether one has the turn. A
// layer of no limit has permits for all. The walk does not ask at its
// first layer: a task walks on only to the layers after the one it was
// handed a permit of.
func (l *line[T]) contested(g *Group[T]) bool {
	if l.limit.Load() == Unlimited {
		return false
	}
	t := g.turns.Load()
	return t != nil && t.n.Load()&turnCount != 0
}

// yields reports whether a fresh walk of g at the layer at i, level lv,
// of its walk (line l) waits for its group's turn. It does if a task of g
// may come to this layer after it. One waits for its turn, or the walker
// was handed a permit of an earlier layer. The walker's own layer, and one
// before it, is no concern of the walker's. A free permit there overtakes
// nobody. So a task of a child takes its own group's free permits and
// waits in its parent's line, in its place among its siblings' tasks.
// And a Do in the listener of the task that handed the walker its last
// permit runs on a free one. It would otherwise wait for that listener.
//
// Where the walker alone has the turn, and the layer is one of g's own
// limits that no other group's task takes (g has no child), the walk may
// take a free permit beside it. spare is then what it leaves free, the
// walker's cost there (takeBeside). So a walk does not wait while the
// walker's releaser runs a listener, or, with no slot to wait on, get
// turned away, while its group's limit has room for both. Elsewhere the
// walker's spare could go to another group's task meanwhile, and the walk
// would start first. So it waits for the turn there, even with permits
// free.
func (l *line[T]) yields(g *Group[T], i int, lv uint8) (yield bool, spare int64) {
	limit := l.limit.Load()
	if limit == Unlimited {
		return false, 0
	}
	t := g.turns.Load()
	if t == nil {
		return false, 0
	}
	n := t.n.Load()
	switch c := n & turnCount; {
	case c == 0:
		return false, 0
	case c > 1:
		return true, 0
	case n&turnPlace >= turnPos(i, lv):
		return false, 0
	case lv > 0 || l == g.global.line || g.hasKids():
		return true, 0
	}
	spare = max(limit, 1)
	if c := int64(n >> turnCostShift); c < turnCostMax {
		spare = min(c, spare)
	}
	return true, spare
}

// takeBeside takes a permit of l for a fresh walk of Ext x (nil for a plain task),
// at the layer bit, level lv, as takeFor does, if spare permits are left
// free after it (yields). A task of a cost above what that leaves takes
// nothing.
//
// The walker, and every walk taking beside it, take from the one count.
// So what they leave is the walker's whatever their order, and only g's
// tasks take it (yields). A group made g's child meanwhile
// could take it, and then the walker waits while the walk runs. A group
// gains its first child once.
func (l *line[T]) takeBeside(x *Ext, bit, lv uint8, spare int64) bool {
	n := int64(1)
	if x != nil && x.amt != nil {
		n = x.amt.cost
	}
	if !l.held.takeN(n, l.limit.Load()-spare) {
		return false
	}
	if n > 1 {
		x.amt.took[index(bit, lv)] = n // what amount reads back
	}
	return true
}

// waitTurn makes w, a fresh walk, wait for its group's turn, and reports
// true, if another task has the turn. Nobody owns w then until its turn
// comes (passTurn). It reports false if nobody has the turn by now, and
// w walks on without it.
func (w *Permits[T]) waitTurn() bool {
	t := w.group.turn()
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		n := t.n.Load()
		if n&turnCount == 0 { // the walker gave it up meanwhile
			return false
		}
		if t.n.CompareAndSwap(n, n+1) {
			w.bit = turnBit
			t.park(w)
			return true
		}
	}
}

// park lists w among the tasks waiting for their turn, behind those a line
// would serve first: of a higher priority, or of its own and older. t.mu
// is held. A new task mostly goes last. A resumed group's tasks, or a
// burst of urgent ones, go ahead of those parked before them, each just
// behind the one parked last. So the search starts there when w goes
// behind it, and from the back otherwise. Neither passes the whole list
// (BenchmarkTurnPark).
func (t *turns[T]) park(w *Permits[T]) {
	at := t.parked.tail
	switch {
	case at == nil || !servedBefore(w, at):
	case t.last != nil && !servedBefore(w, t.last):
		for at = t.last; !servedBefore(w, at.next); at = at.next { // the tail is one w goes ahead of
		}
	default:
		for at != nil && servedBefore(w, at) {
			at = at.prev
		}
	}
	t.parked.linkAfter(w, at, byLine)
	t.last = w
}

// tryTurn gives w its group's turn if nobody has it, and reports whether
// it did. It never makes w wait.
func (w *Permits[T]) tryTurn() bool { return w.group.turn().n.CompareAndSwap(0, w.turnAt()|1) }

// passTurn ends the turn of g's walker. It returns the task whose turn it
// is now, for the caller to carry on, or nil.
func (g *Group[T]) passTurn() *Permits[T] {
	t := g.turns.Load()
	if n := t.n.Load(); n&turnCount == 1 && t.n.CompareAndSwap(n, 0) {
		return nil
	}
	// More than one: each waiting task was counted and parked under mu.
	// Others change the word only under mu, or from 0.
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.parked.head == nil { // a pause took them meanwhile (takeOutTurns)
		t.n.Store(0)
		return nil
	}
	w := t.parked.popHead()
	if w == t.last {
		t.last = nil
	}
	t.n.Store(w.turnAt() | (t.n.Load()&turnCount - 1))
	return w
}

// leaveTurn takes w, a fresh walk waiting for its group's turn, out of
// that wait, and reports whether it did. Then the caller owns w. The turn
// may not come soon: the walker may be carried on only once a listener
// returns, and that listener may be w's caller (a Do). A task handed a
// permit keeps waiting for its turn, as in takeOutTurns.
//
// Interleaving: a task taken from the list has an owner, who writes its
// fields. So w is looked for in the list, under mu, before w.bit is read.
// The list is mostly short, and this is for a cancel alone.
func (w *Permits[T]) leaveTurn() bool {
	t := w.group.turns.Load()
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for p := t.parked.head; p != nil; p = p.links.next {
		if p != w {
			continue
		}
		if w.bit != turnBit {
			return false
		}
		t.unpark(w)
		return true
	}
	return false
}

// takeOutTurns adds to ws g's fresh walks waiting for their turn, taken
// out of its turns, for a pause to move to its pause line (park). They
// were handed nothing. A task handed a permit keeps waiting for its turn.
func (g *Group[T]) takeOutTurns(ws []*Permits[T]) []*Permits[T] {
	return g.sweepTurns(nil, ws)
}

// sweepTurns is takeOutTurns for the fresh walks match accepts (nil: all).
// A sweep (sweepInto) takes them too. Their turn may never come: the
// walker may wait for a listener that waits for them (a Do).
func (g *Group[T]) sweepTurns(match func(p *Permits[T]) bool, ws []*Permits[T]) []*Permits[T] {
	t := g.turns.Load()
	if t == nil {
		return ws
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for w := t.parked.head; w != nil; {
		next := w.links.next
		if w.bit == turnBit && (match == nil || match(w)) {
			t.unpark(w)
			ws = append(ws, w)
		}
		w = next
	}
	return ws
}

// unpark takes w, a fresh walk, out of t's parked list, under t.mu.
func (t *turns[T]) unpark(w *Permits[T]) {
	t.parked.unlink(w, byLine)
	if w == t.last {
		t.last = nil
	}
	t.n.Add(^uint64(0)) // one fewer: the walker's count stays
}
