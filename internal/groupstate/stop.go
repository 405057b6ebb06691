package groupstate

// This file is stopping groups: ShutdownGroup, EvictGroup and Close reach
// a group's tasks here. Each cancels the group's scope, takes its waiting
// tasks out of their lines, and hands them to the caller to end.

// Evict forgets the group for key and cancels its tasks with cause. It
// takes its waiting tasks out of their lines and appends them to out. The
// caller owns them now. Tasks still holding its permits release them into
// it. The next Enter of key creates a new group with freshly resolved
// limits.
//
// Evicting a parent evicts its subtree too. The scopes are replaced and
// cancelled together, as in Shutdown.
func (r *Registry[T]) Evict(key string, cause error, out []*T) []*T {
	g, ok := r.Lookup(key)
	if !ok {
		return out
	}
	gs := append(r.subtree(g, walkClosing), g)
	olds := make([]*scope, len(gs))
	for i, d := range gs {
		if r.remove(d) {
			olds[i] = d.evictScope(cause)
		}
	}
	cancelScopes(olds, cause)
	// The whole subtree is swept before any line hands on (endSweep).
	var c Changes[T]
	var ws []*Permits[T]
	for i, d := range gs {
		if olds[i] != nil {
			ws = d.sweepInto(&c, func(p *Permits[T]) bool { return p.group == d }, ws)
		}
	}
	out = c.endSweep(ws, out)
	return out
}

// Shutdown cancels every task of g and of its subtree with cause, as
// Group.Shutdown does for one group, and appends their waiting tasks to
// out. The caller owns them now, and ends them.
//
// Every group's scope is replaced, and then the old ones are cancelled
// together (cancelScopes), before any is swept. A cancelled running task
// may end at once and hand its parent's permit on. The task it goes to is
// then of a cancelled scope, so it ends cancelled too, and never starts.
func (r *Registry[T]) Shutdown(g *Group[T], cause error, out []*T) []*T {
	gs := append(r.descendants(g), g)
	olds := make([]*scope, len(gs))
	for i, d := range gs {
		olds[i] = d.detach()
	}
	cancelScopes(olds, cause)
	// The whole subtree is swept before any line hands on (endSweep).
	var c Changes[T]
	var ws []*Permits[T]
	for i, d := range gs {
		if old := olds[i]; old != nil {
			ws = d.sweepInto(&c, func(p *Permits[T]) bool { return p.group == d && p.scope == old }, ws)
		}
	}
	return c.endSweep(ws, out)
}

// SweepAll takes every waiting task out of the global line and the lines
// and turns of every group r holds, and appends them to out. The caller
// owns them now. Call it once every task has been cancelled. A task that
// joins a line meanwhile sees that when it looks after joining, and leaves.
func (r *Registry[T]) SweepAll(out []*T) []*T {
	ws := r.global.line.takeOut(nil, nil, nil)
	r.Range(func(g *Group[T]) bool {
		ws = g.conc.takeOut(g, nil, g.bulkhead.takeOut(g, nil, ws))
		ws = g.sweepTurns(nil, ws)
		if pl := g.pauseLine.Load(); pl != nil {
			ws = pl.takeOut(g, nil, ws)
		}
		return true
	})
	for _, w := range ws {
		out = append(out, w.task())
	}
	return out
}

// Shutdown cancels every task of the group with cause. It takes the waiting
// tasks out of their lines and gives later tasks a fresh scope. The tasks
// taken out are appended to out. The caller owns them now, and ends them.
// Shutdown does nothing to an evicted or forgotten group, whose scope is
// already cancelled for good.
//
// Interleaving: a scope is cancelled while it is the group's only when that
// is for good, as for a forgotten group. An evicted group's scope is one
// made cancelled, which nothing replaces. The swap below is from a scope
// found live, and it fails if an eviction came in between. So a shutdown
// never revives an evicted group. Other scopes are cancelled once replaced
// (here, after the swap).
func (g *Group[T]) Shutdown(cause error, out []*T) []*T {
	old := g.detach()
	if old == nil {
		return out
	}
	old.cancel(&cause)
	return g.sweepScope(old, out)
}

// detach gives the group a fresh scope and returns the one it replaced,
// for the caller to cancel and then sweep (sweepScope). It returns nil
// for an evicted or forgotten group, whose scope is cancelled for good.
func (g *Group[T]) detach() *scope {
	var fresh *scope
	for {
		old := g.scope.Load()
		if old.cancelled() {
			if g.scope.Load() == old {
				return nil // cancelled for good
			}
			continue // cancelled by a shutdown that has replaced it
		}
		if fresh == nil {
			fresh = newScope(old.root)
		}
		if g.scope.CompareAndSwap(old, fresh) {
			return old
		}
	}
}

// sweepScope sweeps the group's waiting tasks of scope old, cancelled.
func (g *Group[T]) sweepScope(old *scope, out []*T) []*T {
	return g.sweep(func(p *Permits[T]) bool { return p.group == g && p.scope == old }, out)
}

// evictScope gives the group, just removed from its registry, a final
// scope made cancelled with cause. It returns the scope it replaced, for
// the caller to cancel and then sweep (Evict).
func (g *Group[T]) evictScope(cause error) *scope {
	final := newScope(&g.reg.root)
	final.cause.Store(&cause)
	return g.scope.Swap(final)
}

// sweep takes the waiting tasks that match out of the group's lines and
// the global one. It runs after their scope was cancelled. So a task that
// joins a line meanwhile sees that when it looks after joining, and leaves.
func (g *Group[T]) sweep(match func(p *Permits[T]) bool, out []*T) []*T {
	var c Changes[T]
	return c.endSweep(g.sweepInto(&c, match, nil), out)
}

// sweepInto takes the waiting tasks of g that match out of its lines, its
// turns (sweepTurns), its ancestors' lines and the global one, and appends
// them to ws. It keeps the lines it took from in c, for endSweep.
func (g *Group[T]) sweepInto(c *Changes[T], match func(p *Permits[T]) bool, ws []*Permits[T]) []*Permits[T] {
	for _, l := range g.waitLines() {
		if l != nil {
			ws = c.takeOut(l, g, match, ws)
		}
	}
	ws = g.sweepTurns(match, ws)
	for a := g.up(); a != nil; a = a.up() { // its tasks waiting at an ancestor's layer, or pause
		ws = c.takeOut(&a.conc, g, match, c.takeOut(&a.bulkhead, g, match, ws))
		if pl := a.pauseLine.Load(); pl != nil {
			ws = pl.takeOut(g, match, ws)
		}
	}
	return ws
}

// endSweep ends a sweep of ws, the swept tasks, once every group swept
// together is. Where costs differ, the tasks left behind a swept one may
// fit in the permits free now. So each line it took from hands them on, to
// the first swept task's owner (Handed), as a release would. It does so
// only now. Handed on while tasks of a group swept with them still wait, a
// permit could go to one of those, cancelled, and count in its share, so
// the fair choice would be made with a share that is going away.
func (c *Changes[T]) endSweep(ws []*Permits[T], out []*T) []*T {
	for _, l := range c.lines {
		ws[0].keep(l.grant())
	}
	c.lines = nil
	c.nudgeFreed()
	for _, w := range ws {
		out = append(out, w.task())
	}
	return out
}
