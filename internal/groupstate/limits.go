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
			g.lower(y, c, g.global.after(g, y.bit))
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

// lower enforces y's limit, if its count is over it, on the group's tasks
// that hold y's permit and wait at a later layer. They give back what they
// took from y on. They wait again at the head of y's line, oldest first.
func (g *Group[T]) lower(y layer[T], c *Changes[T], later []layer[T]) {
	if y.l.held.load() <= y.l.limit.Load() {
		return
	}
	var ws []*Permits[T]
	for _, m := range later {
		ws = m.l.takeOut(g, nil, ws)
	}
	requeue(y, ws, c)
}

// requeue puts ws back at the head of y's line, giving back the permits
// they hold of the layers after y first.
func requeue[T any](y layer[T], ws []*Permits[T], c *Changes[T]) {
	if len(ws) == 0 {
		return
	}
	sortBySubmitted(ws)
	for _, w := range ws {
		p := w
		for _, m := range p.group.global.after(p.group, y.bit) {
			p.releaseLine(m.l, m.bit)
		}
		for h := p.Handed(); h != nil; h = p.Handed() {
			c.Handed = append(c.Handed, h)
		}
		c.Requeued = append(c.Requeued, p.task())
	}
	c.handed(y.l.requeue(ws, y.bit))
}

// sortBySubmitted orders ws oldest first.
func sortBySubmitted[T any](ws []*Permits[T]) {
	slices.SortStableFunc(ws, func(a, b *Permits[T]) int { return int(a.submitted - b.submitted) })
}
