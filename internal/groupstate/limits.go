package groupstate

import (
	"cmp"
	"slices"
)

// Answers are what the caller's resolvers answered when the limits were
// resolved. A 0 means not asked, or no answer. They are kept with the
// limits so that they can be explained later without asking again.
// Groupstate never reads them.
type Answers struct{ Concurrency, Weight int }

// Changes collects the tasks a change of limits moved.
type Changes[T any] struct {
	// lines gave back permits while limits were enforced, with no hand-off
	// (see yield). settle hands them on once every limit is enforced.
	lines []*line[T]
	// freed are the queues of no slots whose layers yield gave permits
	// back to, or a waiter left (see left). settle nudges them: a caller
	// blocked there may start now, and no task's end is to wake it. With
	// watched, so are the queues watched for a global permit (WatchGlobal).
	freed   []*slots[T]
	watched bool
	gl      *Global[T] // wakes freed's callers

	// Handed were handed a permit. The caller owns them, and must call
	// Resume on each, in this order: the order its lines would serve
	// them. Where two walk on to one free permit, the one served first
	// takes it.
	Handed []*T
	// Requeued were put back in a line (see lower). They were out of every
	// line for a moment. So the caller checks each for a cancellation that
	// came meanwhile, and makes it Leave.
	Requeued []*T
	// Resumed are the groups resumed with tasks in their pause lines. The
	// caller drains each (StartDrain, Unpark).
	Resumed []*Group[T]
}

func (c *Changes[T]) handed(chain *Permits[T]) { c.Handed = appendOwners(chain, c.Handed) }

// settle hands on the permits given back while limits were enforced. It
// is the last pass of a change of limits. It puts Handed in order.
func (c *Changes[T]) settle() {
	for _, l := range c.lines {
		c.handed(l.grant())
	}
	c.lines = nil
	c.nudgeFreed()
	slices.SortStableFunc(c.Handed, func(a, b *T) int { return compareServed(permitsOf(a), permitsOf(b)) })
}

// nudgeFreed nudges the queues kept in freed, and the watched ones if
// kept too.
func (c *Changes[T]) nudgeFreed() {
	for _, q := range c.freed {
		c.gl.handSlots(q.nudge(), 0)
	}
	if c.watched {
		c.gl.nudgeWatched(nil, false)
	}
	c.freed, c.watched = nil, false
}

// yield gives back, without handing them on, p's permits of steps, and an
// ancestor's slot it holds there. The lines are kept in c to settle. A
// permit handed on here could go to a task that holds a limit lowered
// later in the same change, out of reach of its enforcement.
func (p *Permits[T]) yield(steps []pathStep[T], c *Changes[T]) {
	x := p.x()
	for i := len(steps) - 1; i >= 0; i-- {
		m := steps[i]
		a := p.group.ancestor(m.lv)
		if n := p.giveUp(x, a, m.bit, m.lv); n > 0 {
			m.l.held.giveN(n)
			c.lines = append(c.lines, m.l)
			q := &a.queue
			if m.bit == heldGlobal {
				q = a.global.queue
			}
			if q.limit.Load() == 0 {
				c.freed, c.gl = append(c.freed, q), a.global
			}
		}
	}
}

// A change of limits goes in three passes, in this order for every layer
// it touches (see Registry.Update). First it stores the lowered limits.
// Then it enforces them (lower). Then it stores the raised ones and hands
// on the permits they free (grant). So no task starts under a mix of the
// two: a raised layer never lets through a task that a lowered layer is
// about to send back.
//
// A lowered limit takes no permit back from a running task. It lets no
// task start past it until the layer's count is below it. Tasks that hold
// its permit but still wait at a later layer go back to the head of its
// line.

// setLimits stores l as the group's limits. Its layers take the lowered
// ones now, and the raised ones in grant (raise).
func (g *Group[T]) setLimits(l Limits) {
	l.Weight = max(l.Weight, 1)
	g.limits.Store(g.reg.share(l))
	g.queue.setLimit(l.QueueThreshold)
	g.global.setWeight(g, l.Weight)
	g.bulkhead.lowerTo(l.MaxInFlight)
	g.setPaused(l.Paused)
	g.conc.lowerTo(concLimit(l)) // a resumed group's stays 0 until grant, after park
}

// raise stores the group's raised limits, which setLimits left as they were.
func (g *Group[T]) raise() {
	l := *g.limits.Load()
	g.bulkhead.setLimit(l.MaxInFlight)
	g.conc.setLimit(concLimit(l))
}

// enforce sends back the tasks past the group's lowered limits, and every
// waiting task of a paused group to its pause line.
func (g *Group[T]) enforce(c *Changes[T]) {
	g.park(c)
	for _, y := range g.global.layers(g) {
		if y.bit != heldGlobal {
			g.lower(y.l, y.bit, c)
		}
	}
}

// grant stores the raised limits of groups, and hands on the permits they
// free, then the queue slots to callers waiting for one. A queue of no
// slots nudges its first caller instead, as its task may start now. The
// layers go in the reverse of the walk, the global one too if global, and
// at each the ancestors' first. So the task furthest along its walk is handed a
// permit first, and takes its group's turn (turn.go) before a task of
// its group handed one at an earlier layer: it was submitted first, and
// it walks on to a permit the change freed first.
func grant[T any](gl *Global[T], groups []*Group[T], global bool, c *Changes[T]) {
	for _, g := range groups {
		g.raise()
	}
	if len(groups) > 1 {
		groups = slices.Clone(groups)
		slices.SortStableFunc(groups, func(a, b *Group[T]) int { return cmp.Compare(a.depth(), b.depth()) })
	}
	for i := len(gl.walk) - 1; i >= 0; i-- {
		switch bit := gl.walk[i].bit; {
		case bit != heldGlobal:
			for _, g := range groups {
				c.handed(g.lineOf(bit).grant())
			}
		case global:
			c.handed(gl.line.grant())
		}
	}
	if global {
		gl.handSlots(gl.queue.handOut(), heldGlobalSlot)
		gl.handSlots(gl.queue.nudge(), 0) // a queue of no slots, as a group's
	}
	for _, g := range groups {
		g.global.handSlots(g.queue.handOut(), heldGroupSlot)
		g.global.handSlots(g.queue.nudge(), 0)
		g.unpark(c)
	}
}

// lower enforces the limit of g's layer l (bit), if its count is over it,
// on the tasks that hold its permit and wait at a later layer. Those are
// tasks of g and, for a parent, of its subtree. They give back what they
// took after l. They wait again at the head of l's line, oldest first.
func (g *Group[T]) lower(l *line[T], bit uint8, c *Changes[T]) {
	if l.held.load() <= l.limit.Load() {
		return
	}
	var ws []*Permits[T]
	for _, d := range append(g.reg.descendants(g), g) {
		of := func(w *Permits[T]) bool { return w.group == d }
		for _, m := range g.global.after(d, bit, d.depth()-g.depth()) {
			ws = c.takeOut(m.l, d, of, ws)
		}
	}
	requeue(l, bit, g, ws, c)
}

// requeue puts ws back at the head of l's line, the layer bit of group a
// (nil for the global layer). It gives back the permits they hold of the
// layers after it first.
func requeue[T any](l *line[T], bit uint8, a *Group[T], ws []*Permits[T], c *Changes[T]) {
	if len(ws) == 0 {
		return
	}
	sortBySubmitted(ws)
	for _, p := range ws {
		lv := p.levelOf(a)
		p.yield(p.group.global.after(p.group, bit, lv), c)
		if a != nil {
			p.holdSlotAt(a, lv)
		}
		c.Requeued = append(c.Requeued, p.task())
	}
	l.requeue(ws, bit, a)
	c.lines = append(c.lines, l)
}

// levelOf returns the level of a on the path of p's group: 0 for its own
// group, or for a nil a (the global layer).
func (p *Permits[T]) levelOf(a *Group[T]) uint8 {
	if a == nil {
		return 0
	}
	return p.group.depth() - a.depth()
}

// Update makes limit and queueThreshold the global limits. It makes
// resolve the source of limits for new groups and, at once, for every
// known group (see Group.setLimits). Under IsolationOff a lowered global
// limit is enforced as a group's are. Tasks holding a global permit but
// still waiting for their group's go back to the head of the global line.
// Calls must not overlap, with each other or with UpdateGroup.
func (r *Registry[T]) Update(limit, queueThreshold int, resolve func(key string) Limits) *Changes[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.global.changes.begin() // before the global limit changes
	defer func() { r.global.changes.end(r.clock()) }()
	r.resolve = resolve
	r.global.queue.setLimit(queueThreshold)
	r.global.line.lowerTo(limit)
	var groups []*Group[T]
	r.Range(func(g *Group[T]) bool {
		groups = append(groups, g)
		return true
	})
	return r.resolveLocked(groups, limit, func(g *Group[T]) Limits { return resolve(g.key) })
}

// keepGlobal leaves the global limit as it is (see resolveLocked).
const keepGlobal = -1

// UpdateGroup gives g the limits resolve returns for those in force, as
// Update resolves every group's again, if g is still the registry's group
// for its key. It does nothing for a group evicted or forgotten. No
// adaptive tuning (Tune) runs meanwhile, so resolve may carry one on.
// Calls must not overlap, with each other or with Update.
func (r *Registry[T]) UpdateGroup(g *Group[T], resolve func(cur Limits) Limits) *Changes[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.Lookup(g.key); !ok || cur != g {
		return new(Changes[T])
	}
	return r.resolveLocked([]*Group[T]{g}, keepGlobal, func(g *Group[T]) Limits { return resolve(g.Limits()) })
}

// resolveLocked gives groups the limits resolve returns and applies them,
// and global as the global limit (keepGlobal: none), in the three passes
// of a change of limits (see limits.go). r.mu must be held.
func (r *Registry[T]) resolveLocked(groups []*Group[T], global int, resolve func(*Group[T]) Limits) *Changes[T] {
	r.global.changes.begin()
	defer func() { r.global.changes.end(r.clock()) }()
	c := new(Changes[T])
	for _, g := range groups {
		g.setLimits(resolve(g))
	}
	// A lowered global limit sends back the tasks that hold a global permit
	// and wait at a later layer. Under fair share no layer comes later.
	if l := r.global.line; l.held.load() > l.limit.Load() {
		var ws []*Permits[T]
		for _, g := range groups {
			of := func(w *Permits[T]) bool { return w.group == g }
			for _, m := range r.global.after(g, heldGlobal, 0) {
				ws = m.l.takeOut(g, of, ws)
			}
		}
		requeue(l, heldGlobal, nil, ws, c)
	}
	for _, g := range groups {
		g.enforce(c)
	}
	if global != keepGlobal {
		r.global.line.setLimit(global) // raised, if it was
	}
	grant(r.global, groups, true, c)
	c.settle()
	return c
}
