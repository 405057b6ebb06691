package groupstate

// An adaptive limit moves one group's concurrency limit, or the global
// one, between policy updates. It goes the way Update goes for the layers
// it touches. It stores, enforces what was lowered, and grants what was
// raised. So a raised limit starts waiting tasks at once, and a lowered one
// drains without interrupting anything.

// Tuning returns the Tuning of the group's limits in force, or nil if none.
func (g *Group[T]) Tuning() any { return g.limits.Load().Tuning }

// Running reports the group's running tasks, those holding every permit.
func (g *Group[T]) Running() int {
	return max(int(g.global.running(g)), 0)
}

// RunningCost reports the permits held at g's concurrency limit by its own
// running tasks. A parent's subtree holds SubtreeCost more.
func (g *Group[T]) RunningCost() int {
	k := g.kin.Load()
	raised, _ := g.conc.wholeOf(g)
	if g.parent != nil {
		return int(max(k.run.Load()+k.over.Load()+raised, 0))
	}
	n := g.global.running(g) + raised
	if k != nil {
		n += k.over.Load() // a plain task costs one
	}
	return int(max(n, 0))
}

// SubtreeCost reports the permits g's descendants' running tasks hold at
// g's concurrency limit. A parent's running cost is its own RunningCost
// and this.
func (g *Group[T]) SubtreeCost() int {
	if k := g.kin.Load(); k != nil {
		_, raised := g.conc.wholeOf(g)
		return int(max(k.subCost.Load()+raised, 0))
	}
	return 0
}

// Binds reports whether a task waits in the group's concurrency line. Its
// limit then holds it back, though the permits held may be fewer: the
// first waiting task costs more than is left.
func (g *Group[T]) Binds() bool { return g.conc.waiting.Load() > 0 }

// Concurrency returns the group's concurrency limit in force.
// A paused group's is its limits', since the line's is 0 meanwhile, as it
// is while a resume moves what reached its lines (see park).
func (g *Group[T]) Concurrency() int {
	if g.paused.Load()&(pausedOn|resumedOn) != 0 {
		return g.limits.Load().Concurrency
	}
	return int(g.conc.limit.Load())
}

// Group returns the group given to Init.
func (p *Permits[T]) Group() *Group[T] { return p.group }

// Tune makes conc the group's concurrency limit and queue(conc) its queue
// threshold, if the limits in force still carry tuning. They do unless
// Update replaced them meanwhile. queue is called with no change under way
// (UpdateGroup may change what it reads). Tune returns the concurrency
// limit before, and the tasks the change moved. The caller carries those
// on as after Update. The tasks are nil if nothing changed. Calls may
// overlap with each other and with Update.
func (r *Registry[T]) Tune(g *Group[T], tuning any, conc int, queue func(conc int) int) (old int, c *Changes[T]) {
	// Update stores limits under mu's write side. tuneMu orders tunings.
	// The lock order is r.mu, r.tuneMu, then the lines' locks. There is one
	// lock for every group, not one each, because tunings are few next to
	// groups.
	r.mu.RLock()
	defer r.mu.RUnlock()
	r.tuneMu.Lock()
	defer r.tuneMu.Unlock()
	l := *g.limits.Load()
	if l.Tuning != tuning {
		return l.Concurrency, nil
	}
	q := queue(conc)
	if l.Concurrency == conc && l.QueueThreshold == q {
		return l.Concurrency, nil
	}
	old = l.Concurrency
	l.Concurrency, l.QueueThreshold = conc, q
	g.global.changes.begin()
	defer func() { g.global.changes.end(r.clock()) }()
	g.setLimits(l)
	c = new(Changes[T])
	g.enforce(c)
	grant(g.global, []*Group[T]{g}, false, c)
	c.settle()
	return old, c
}

// Running reports the tasks running in every group.
func (gl *Global[T]) Running() int { return gl.runs.load() }

// RunningCost reports the global permits held. Under fair share only
// running tasks hold one, so these are its running tasks' permits.
func (gl *Global[T]) RunningCost() int {
	inFlight, _ := gl.Held()
	return max(inFlight, 0)
}

// Binds reports whether a task waits in the global line, as Group's Binds
// does for a group's concurrency line.
func (gl *Global[T]) Binds() bool { return gl.line.waiting.Load() > 0 }

// Limit returns the global limit in force.
func (gl *Global[T]) Limit() int { return int(gl.line.limit.Load()) }

// TuneGlobal makes n the global limit under fair share. There only running
// tasks hold a global permit. So a lowered limit has nobody to send back,
// and a raised one hands its permits on. It returns the limit before and
// the tasks handed a permit. The tasks are nil if nothing changed. The
// caller orders it with Update, and it may overlap with Tune.
func (gl *Global[T]) TuneGlobal(n int) (old int, c *Changes[T]) {
	l := gl.line
	old = int(l.limit.Load())
	if !gl.fair || old == n {
		return old, nil
	}
	l.setLimit(n)
	c = new(Changes[T])
	grant(gl, nil, true, c)
	gl.nudgeWatched(nil, false)
	return old, c
}
