package redisgc

import (
	"context"
	"time"
)

// step is one tick of Run. It falls back once the lease's deadline has
// passed. It reads the executor's demand, and sends a sync when the replica
// is busy or its lease is due. It returns when to tick again. It returns an
// error only if the executor is closed.
func (c *Coordinator) step(ctx context.Context) (time.Duration, error) {
	if err := c.target.closed(); err != nil {
		return 0, err
	}
	if err := c.fallBackIfDue(); err != nil {
		return 0, err
	}
	if cl := c.call; cl != nil {
		// One call at a time. A link that hangs holds one call, whose
		// goroutine ends when the client gives up on it.
		if !time.Now().Before(cl.bound) {
			c.abandon()
		}
		return c.nextTick(), nil
	}
	groups, total := c.readLoads()
	c.track(groups)
	reqs, pools := c.requests(groups, total, false)
	mode, member := syncRenew, c.member
	if member == "" {
		// A join whose reply was lost may have reached Redis. Sent again
		// under the same ID, it replaces its declaration there (a copy
		// still on its way is stale), so Redis counts the replica once.
		if c.joining == "" {
			c.joining = newMemberID(c.opts.Name)
		}
		mode, member = syncJoin, c.joining
	}
	// An idle replica renews every RenewInterval, and sooner if its
	// fallback would come within a third of one: a slow change of limits
	// moves fallbackAt closer to the sync.
	idle := len(reqs) == 0 && time.Since(c.lastSync) < c.opts.RenewInterval &&
		time.Until(c.fallbackAt()) > c.opts.RenewInterval/3
	if mode == syncRenew && c.mode == ModeConnected && idle {
		return c.nextTick(), nil
	}
	sent := time.Now()
	if mode == syncJoin {
		c.joinSent = sent
	}
	bound := sent.Add(c.opts.RenewInterval)
	if at := c.fallbackAt(); mode == syncRenew && at.Before(bound) {
		bound = at
	}
	c.send(ctx, &call{mode: mode, member: member, reqs: reqs, pools: pools, groups: groups, sent: sent, bound: bound})
	return c.nextTick(), nil
}

// settle applies the reply of the call in flight. It reports whether to
// tick again at once, to join again. It returns an error only if the
// executor refused a policy.
func (c *Coordinator) settle(r reply) (bool, error) {
	cl := c.call
	c.call = nil
	if cl.abandoned {
		// Given up at its bound, or the replica fell back meanwhile. What
		// Redis did with it only counts more for a lease no longer used.
		return false, nil
	}
	c.lastErr = r.err
	if r.err != nil {
		// Keep what is held, never more, until the deadline.
		if c.mode == ModeConnected {
			c.mode = ModeHolding
		}
		return false, nil
	}
	if r.res.lost {
		// Redis let the lease go, or lost its data, so nothing held counts.
		// Fall back, and join again as a new member at once.
		return true, c.fallBack()
	}
	c.member, c.mode, c.lastSync, c.joining = cl.member, ModeConnected, cl.sent, ""
	// The lease runs LeaseTTL from when Redis ran the script, which is after
	// sent. A tenth of the TTL absorbs a clock running slow here.
	c.deadline = c.leaseEnd(cl.sent)

	changed := false
	for i, p := range cl.pools {
		res, req := r.res.pools[i], cl.reqs[i]
		p.held, p.used, p.members, p.want = res.share, res.used, res.members, req.want
		// Raise only to what Redis counts. Lower at once to the target, and
		// give the difference back on a later sync, once it is not running.
		// Never above the fleet limit. A share above it, declared for tasks
		// that ran before the join, only lets them drain.
		local := max(1, min(res.share, res.target, p.limit))
		if req.want == 0 && time.Since(p.lastBusy) >= c.opts.RenewInterval {
			local = 1 // idle a while, so give it all back
		}
		if cl.mode == syncJoin {
			// A declaration counts what runs, and it raises nothing.
			local = min(local, p.local)
		}
		if local != p.local {
			p.local, changed = local, true
		}
	}
	for g, p := range c.pools {
		if p.held <= 1 && p.local <= 1 && p.want <= 1 && cl.groups[g].demand() <= 1 {
			delete(c.pools, g)
		}
	}
	if !changed {
		return false, nil
	}
	// The status never shows a mode whose limits are below the executor's,
	// and this one's are at least those in force.
	c.publish()
	return false, c.apply()
}

// readLoads returns the load of each coordinated group the executor knows,
// and the executor's total.
func (c *Coordinator) readLoads() (map[string]load, load) {
	groups := make(map[string]load)
	for g, l := range c.target.groups {
		if _, ok := c.opts.fleetLimit(g); ok {
			groups[g] = l
		}
	}
	return groups, c.target.total()
}

// track adds a pool for each coordinated group that could use more than the
// 1 every replica holds without asking.
func (c *Coordinator) track(groups map[string]load) {
	for g, l := range groups {
		if _, ok := c.pools[g]; ok || l.demand() <= 1 {
			continue
		}
		limit, _ := c.opts.fleetLimit(g)
		c.pools[g] = &pool{group: g, key: c.opts.groupKey(g), limit: limit, held: 1, local: 1}
	}
}

// requests returns the pools to send and what to send for each. A pool
// keeps what its executor may run (its local limit, or more while a lowered
// limit drains), and wants as many slots as it has tasks, up to the limit.
// When leaving, it wants nothing and keeps only what runs, and every group
// that runs a task is sent, so that Redis knows whether anything runs.
func (c *Coordinator) requests(groups map[string]load, total load, leaving bool) ([]poolRequest, []*pool) {
	var reqs []poolRequest
	var pools []*pool
	add := func(p *pool, l load) {
		r := poolRequest{key: p.key, limit: p.limit, want: min(p.limit, l.demand()), keep: max(p.local, l.running)}
		if l.demand() > 0 || p.lastBusy.IsZero() {
			p.lastBusy = time.Now()
		}
		if leaving {
			r.want, r.keep = 0, l.running
		}
		// Until a reply confirms a want, Redis may hold any sent since.
		p.want = max(p.want, r.want)
		reqs, pools = append(reqs, r), append(pools, p)
	}
	if leaving {
		for g, l := range groups {
			if _, ok := c.pools[g]; !ok && l.running > 0 {
				limit, _ := c.opts.fleetLimit(g)
				c.pools[g] = &pool{group: g, key: c.opts.groupKey(g), limit: limit, held: 1, local: 1}
			}
		}
	}
	for g, p := range c.pools {
		add(p, groups[g])
	}
	// A want above 1 stays in Redis until sent again: a replica whose
	// tasks are gone says so, or the others stay held to a fair split
	// with a want nobody has.
	// A join sends it always: an earlier join of the same ID, whose reply
	// was lost, may have declared tasks there, and a declaration left is
	// only replaced by one sent again.
	if p := c.global; p != nil && (p.held > 1 || p.local > 1 || p.want > 1 || total.demand() > 1 || leaving || c.member == "") {
		add(p, total)
	}
	return reqs, pools
}

// fallbackAt is when the replica falls back: at the lease's deadline, less
// the time the fallback's change of limits will take. UpdatePolicy resolves
// every group the executor remembers again, so with many groups the
// fallback itself takes a while, and must be in force by the deadline. Its
// time is the last changes' time per group, times the groups remembered
// now, which may be many more than then.
func (c *Coordinator) fallbackAt() time.Time {
	return c.deadline.Add(-c.applyCost * time.Duration(max(c.groups, 1)))
}

// fallBackIfDue falls back once fallbackAt has come. The lease may have
// expired in Redis by the deadline: it was renewed no later than when the
// last successful sync was sent. So the replica stops relying on the
// shares, even with a call still in flight.
func (c *Coordinator) fallBackIfDue() error {
	c.groups = c.target.remembered()
	if c.member != "" && !time.Now().Before(c.fallbackAt()) {
		return c.fallBack()
	}
	return nil
}

// fallBack lowers every limit to its fallback, never above what the
// replica runs now. It forgets the lease, and the call in flight with it.
func (c *Coordinator) fallBack() error {
	c.abandon()
	for _, p := range c.pools {
		p.local = min(p.local, c.opts.fallback(p.limit, p.local))
		p.held = p.local
	}
	if p := c.global; p != nil {
		p.local = min(p.local, c.opts.fallback(p.limit, p.local))
		p.held = p.local
	}
	c.member, c.mode = "", ModeFallback
	err := c.apply()
	c.publish()
	return err
}

// leave stops coordinating. The executor keeps the fallback limits, and
// Redis gets back what it is not running. What still runs stays counted
// until the lease, no longer renewed, expires. The call in flight and the
// leave get a RenewInterval in all, and no more than the lease has left.
// If the executor is shut down, it takes no more tasks, so what it has
// ends: leave waits for that, until the lease's deadline, and gives back
// the rest.
func (c *Coordinator) leave(ctx context.Context) {
	member, deadline := c.member, c.deadline
	if member == "" && c.joining != "" {
		// A join not confirmed, in flight or not, may have reached Redis:
		// leave for its member.
		member, deadline = c.joining, c.leaseEnd(c.joinSent)
	}
	_ = c.fallBack()
	if member == "" {
		return
	}
	until := time.Now().Add(min(c.opts.RenewInterval, time.Until(deadline)))
	if c.call != nil {
		if _, ok := c.await(until); !ok {
			return
		}
	}
	if !c.sendLeave(ctx, member, until) || c.target.closed() == nil {
		return
	}
	// Past the deadline Redis may have let the lease go, with all it held,
	// so there is nothing left to give back.
	if c.drain(deadline) {
		c.sendLeave(ctx, member, time.Now().Add(min(c.opts.RenewInterval, time.Until(deadline))))
	}
}

// sendLeave sends a leave for member, keeping what the executor runs, and
// waits for its reply until the given time. It reports whether Redis still
// counts something for the member: then its lease stays, not renewed.
func (c *Coordinator) sendLeave(ctx context.Context, member string, until time.Time) bool {
	if !time.Now().Before(until) {
		return false // the lease may have ended, and what it held with it
	}
	groups, total := c.readLoads()
	reqs, _ := c.requests(groups, total, true)
	c.send(ctx, &call{mode: syncLeave, member: member, reqs: reqs, sent: time.Now(), bound: until})
	r, ok := c.await(until)
	if !ok {
		return false
	}
	c.lastErr = r.err
	if r.err != nil || r.res.lost {
		return false
	}
	for _, q := range reqs {
		if q.keep > 0 {
			return true
		}
	}
	return false
}

// drain reads the executor's load every SyncInterval until it has no task
// the fleet counts, and reports whether that came before the given time.
func (c *Coordinator) drain(until time.Time) bool {
	for c.busy() {
		left := time.Until(until)
		if left <= 0 {
			return false
		}
		<-time.After(min(c.opts.SyncInterval, left))
	}
	return true
}

// busy reports whether a coordinated group, or with a global limit any
// group, has a task running or waiting to run. A waiting task would take
// a permit as it starts.
func (c *Coordinator) busy() bool {
	groups, total := c.readLoads()
	for _, l := range groups {
		if l.demand() > 0 {
			return true
		}
	}
	return c.global != nil && total.demand() > 0
}

// apply sets the executor's limits to the local ones.
func (c *Coordinator) apply() error {
	start, groups := time.Now(), max(c.target.remembered(), 1)
	defer func() { c.applyCost = max(time.Since(start)/time.Duration(groups), c.applyCost/2) }()
	limits := make(map[string]int)
	for g, p := range c.pools {
		if p.local > 1 {
			limits[g] = p.local
		}
	}
	global := 0
	if c.global != nil {
		global = c.global.local
	}
	return c.target.apply(limits, global)
}

// leaseEnd is when a lease renewed by a sync sent at sent ends, as this
// replica counts it.
func (c *Coordinator) leaseEnd(sent time.Time) time.Time {
	return sent.Add(c.opts.LeaseTTL - c.opts.LeaseTTL/10)
}
