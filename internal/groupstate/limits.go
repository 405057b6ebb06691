package groupstate

import "slices"

// Answers are what the caller's resolvers answered when the limits were
// resolved. A 0 means not asked, or no answer. They are kept with the
// limits so that they can be explained later without asking again.
// Groupstate never reads them.
type Answers struct{ Concurrency, Weight int }

// Changes collects the tasks a change of limits moved.
type Changes[T any] struct {
	// Handed were handed a permit. The caller owns them, and must call
	// Resume on each.
	Handed []*T
	// Requeued were put back in a line (see lower). They were out of every
	// line for a moment. So the caller checks each for a cancellation that
	// came meanwhile, and makes it Leave.
	Requeued []*T
	// Resumed were taken out of a resumed group's pause line, in order.
	// The caller owns them, and must call Resume on each, in that order.
	Resumed []*T
}

func (c *Changes[T]) handed(chain *Permits[T]) { c.Handed = appendOwners(chain, c.Handed) }

// A change of limits goes in three passes, in this order for every layer
// it touches (see Registry.Update). First it stores the new limits. Then
// it enforces the lowered ones (lower). Then it hands on the permits the
// raised ones free (grant). So a raised layer never lets through a task
// that a lowered layer before it is about to send back.
//
// A lowered limit takes no permit back from a running task. It lets no
// task start past it until the layer's count is below it. Tasks that hold
// its permit but still wait at a later layer go back to the head of its
// line.

// setLimits stores l as the group's limits.
func (g *Group[T]) setLimits(l Limits) {
	l.Weight = max(l.Weight, 1)
	g.limits.Store(g.reg.share(l))
	g.queue.setLimit(l.QueueThreshold)
	g.global.setWeight(g, l.Weight)
	g.bulkhead.setLimit(l.MaxInFlight)
	g.setPaused(l.Paused)
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

// grant hands on the permits the group's raised limits free, outer layer
// first, then the queue slots to callers waiting for one. A queue of no
// slots nudges its first caller instead, as its task may start now.
func (g *Group[T]) grant(c *Changes[T]) {
	c.handed(g.bulkhead.grant())
	c.handed(g.conc.grant())
	g.global.handSlots(g.queue.handOut(), heldGroupSlot)
	g.global.handSlots(g.queue.nudge(), 0)
	g.unpark(c)
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
	for _, d := range append(g.reg.Subtree(g), g) {
		of := func(w *Permits[T]) bool { return w.group == d }
		for _, m := range g.global.after(d, bit, d.depth()-g.depth()) {
			ws = m.l.takeOut(d, of, ws)
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
		for _, m := range p.group.global.after(p.group, bit, lv) {
			if m.lv == 0 {
				p.releaseLine(m.l, m.bit)
			} else {
				p.releaseAt(p.ext(), p.group.ancestor(m.lv), m.bit, m.lv)
			}
		}
		for h := p.Handed(); h != nil; h = p.Handed() {
			c.Handed = append(c.Handed, h)
		}
		c.Requeued = append(c.Requeued, p.task())
	}
	c.handed(l.requeue(ws, bit, a))
}

// levelOf returns the level of a on the path of p's group: 0 for its own
// group, or for a nil a (the global layer).
func (p *Permits[T]) levelOf(a *Group[T]) uint8 {
	if a == nil {
		return 0
	}
	return p.group.depth() - a.depth()
}

// sortBySubmitted orders ws oldest first.
func sortBySubmitted[T any](ws []*Permits[T]) {
	slices.SortStableFunc(ws, func(a, b *Permits[T]) int { return int(a.submitted - b.submitted) })
}
