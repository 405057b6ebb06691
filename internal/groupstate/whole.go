package groupstate

// This file is how a task whose cost is above a line's limit holds the
// whole of it. It takes all the limit has, so it runs alone there. A limit
// raised while it holds them tops it up to the new limit, or to its cost
// if that is less. So it still runs alone under a raised limit that stays
// below its cost. A lowered limit takes nothing back.
//
// The line keeps such a task in its waiters (whole), under their mu. The
// task's own record (Ext.amt) keeps what it took, which only its owner
// reads. What raises add is kept apart, in whole, and the owner takes it
// back under mu as it gives the layer back (dropWhole). So a raise and
// the task's end never both count the same permits. The stats count what
// raises added (wholeOf). So do fair share's counts, as the raise adds
// them (fairTopUp), since a share is the permits held.
//
// Interleaving: only one task at a time holds a line's whole limit. It
// took it with nothing held there, and holds at least one permit until
// dropWhole. A raise stores the limit under mu once waiters exist (see
// setLimit), and the task records itself under mu as it takes. So a raise
// either comes first, and the task takes the raised limit, or comes after,
// and tops up its record.

// wholeTake is the task holding a line's whole limit, its cost being above it.
type wholeTake[T any] struct {
	p       *Permits[T]
	cost    int64 // the task's cost
	took    int64 // what it took, which it gives back itself
	held    int64 // guarded by the waiters' mu: took, and what raises added
	bit, lv uint8 // the layer, and the level of its group on p's path
}

// takeFor takes the permits w (of Ext x) needs at the layer bit at level
// lv, if they are free, waiters or not. A cost above the limit takes the
// whole limit, under mu (see whole).
func (l *line[T]) takeFor(w *Permits[T], x *Ext, bit, lv uint8) bool {
	if x == nil || x.amt == nil { // a cost of one: one permit, nothing to record
		return l.take()
	}
	if limit := l.limit.Load(); limit == Unlimited || x.amt.cost <= max(limit, 1) {
		return l.takeCost(x, bit, lv, limit) != 0
	}
	r := l.lock()
	defer r.unlock()
	return l.takeForLocked(r, w, x, bit, lv)
}

// takeForLocked is takeFor for a caller that holds mu.
func (l *line[T]) takeForLocked(r *waiters[T], w *Permits[T], x *Ext, bit, lv uint8) bool {
	if x == nil || x.amt == nil {
		return l.take()
	}
	limit := l.limit.Load()
	n := l.takeCost(x, bit, lv, limit)
	if n != 0 && n < x.amt.cost && limit != Unlimited && r.whole.Load() == nil {
		r.whole.Store(&wholeTake[T]{p: w, cost: x.amt.cost, took: n, held: n, bit: bit, lv: lv})
	}
	return n != 0
}

// takeCost takes x's cost under limit, or the whole limit if less, and
// records it. It returns what it took, 0 if that is not free.
func (l *line[T]) takeCost(x *Ext, bit, lv uint8, limit int64) int64 {
	var n int64
	if limit == Unlimited {
		n = l.held.addUpTo(x.amt.cost)
	} else if n = min(x.amt.cost, max(limit, 1)); !l.held.takeN(n, limit) {
		return 0
	}
	x.amt.took[index(bit, lv)] = n // what amount reads back
	return n
}

// topUpLocked tops up the task holding the whole limit to n, the limit
// just stored, or to its cost if less. The caller holds mu.
func (l *line[T]) topUpLocked(r *waiters[T], n int64) {
	w := r.whole.Load()
	if w == nil {
		return
	}
	if want := min(w.cost, max(n, 1)); want > w.held {
		added := l.held.addUpTo(want - w.held)
		w.held += added
		fairTopUp(r, w, added)
	}
}

// fairTopUp counts n permits a raise added to w's in fair share's counts,
// as a take counts them (countWhole). The holder gives them back with the
// permits (dropWhole). The caller holds mu, so the fair queue's order is
// mended here.
func fairTopUp[T any](r *waiters[T], w *wholeTake[T], n int64) {
	g := w.p.group
	countWhole(g, w.bit, w.lv, n)
	if q, ok := r.disc.(*fairQueue[T]); ok && n != 0 && w.bit == heldGlobal {
		q.fix(g)
	}
}

// countWhole counts n permits more (or fewer) that raises added to those
// a task of g holds at the layer bit of level lv, in fair share's counts.
// No task's amount says them, so they are counted apart. The global
// layer's go in the group's running (runFair). For a top group they go in
// kin.extra too, so that Global.running still counts tasks. An ancestor's
// layer's go in the share of the child on g's path (kidHeld). A group's
// own layers keep no share.
func countWhole[T any](g *Group[T], bit, lv uint8, n int64) {
	if n == 0 || !g.global.fair {
		return
	}
	switch {
	case bit == heldGlobal:
		runFair(g, n)
		if g.parent == nil {
			g.family().extra.Add(n)
		}
	case lv > 0:
		g.ancestor(lv - 1).kin.Load().held[layerIndex(bit)].Add(n)
	}
}

// dropWhole returns what raises added to p's permits here, if p holds the
// whole limit, for p to give back with what it took. p then holds it no
// more, and fair share's counts no longer count them. x is p's Ext.
func (l *line[T]) dropWhole(p *Permits[T], x *Ext) int64 {
	if x == nil || x.amt == nil {
		return 0
	}
	// Load whole once: another task's record may go in between. Only p
	// drops its own.
	r := l.waiters.Load()
	if r == nil {
		return 0
	}
	if w := r.whole.Load(); w == nil || w.p != p {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return l.dropWholeLocked(r, p)
}

// dropWholeLocked is dropWhole for a caller that holds mu.
func (l *line[T]) dropWholeLocked(r *waiters[T], p *Permits[T]) int64 {
	w := r.whole.Load()
	if w == nil || w.p != p {
		return 0
	}
	r.whole.Store(nil)
	added := w.held - w.took
	countWhole(p.group, w.bit, w.lv, -added) // before the caller gives them back
	return added
}

// wholeOf reports what raises added to the permits of the task holding
// the whole limit, if it is a task of g (own) or of g's subtree (below).
func (l *line[T]) wholeOf(g *Group[T]) (own, below int64) {
	r := l.waiters.Load()
	if r == nil || r.whole.Load() == nil {
		return 0, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.whole.Load()
	if w == nil {
		return 0, 0
	}
	if w.p.group == g {
		return w.held - w.took, 0
	}
	return 0, w.held - w.took
}
