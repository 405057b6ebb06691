package groupconc

import "github.com/kobe/groupconc/internal/groupstate"

// The executor's goroutines, and how a task ends on them. Every goroutine
// the executor starts runs one of serve, carry, resume (of one task handed
// a permit, or of several, goHandOn), resumeTurnedAway, endCancelled or
// endDisplaced. It belongs to the task it was started for (see
// scheduler.go's table). Two more carry on changes (changes.go): one drains
// a resumed group's pause line, one moves a task to it (repark). It is
// counted in the crew from before it starts until it ends, so that Shutdown
// can wait for it. The go* methods start them.

// goServe starts a goroutine for the ready queue's role.
func (e *GroupExecutor) goServe() {
	e.crew.add()
	go e.serve()
}

// goCarry starts a goroutine that runs t, which got its last permit at
// start, and then what work finds next.
func (e *GroupExecutor) goCarry(t *task, start int64) {
	e.crew.add()
	go e.carry(t, start)
}

// goResume starts a goroutine that carries t, just handed a permit, on.
func (e *GroupExecutor) goResume(t *task) {
	e.crew.add()
	go e.resume(t)
}

// goHandOn starts a goroutine that carries on the tasks p's releases handed
// a permit to. One task gets one, as goResume. Several are carried on by one
// goroutine, in their order, as handOn does inline: on goroutines of their
// own they would reach a line they share (a parent's) in any order.
func (e *GroupExecutor) goHandOn(p *groupstate.Permits[task]) {
	t := p.Handed()
	switch {
	case t == nil:
	case !p.HasHanded():
		e.goResume(t)
	default:
		h := new(groupstate.Permits[task]) // holds the chain, which t heads
		h.Adopt(p)
		h.PutBack(t)
		e.crew.add()
		go func() {
			growStack()
			defer e.crew.exit()
			e.work(e.handOn(h, handOffInline, noTime))
		}()
	}
}

// goEndCancelled starts a goroutine that ends t, which a cancellation took
// out of its line.
func (e *GroupExecutor) goEndCancelled(t *task) {
	e.crew.add()
	go e.endCancelled(t)
}

// launch has t run on a goroutine of the executor. The task was admitted
// inside Submit, or rejected there, to be run by its handler or the
// caller-runs policy. It goes in the ready queue, which says whether a
// goroutine must be started to take it out. Starting a goroutine is most of
// what running a trivial task costs (W1 of the benchmarks module), so
// goroutines are reused.
func (e *GroupExecutor) launch(t *task) {
	if t.inline() {
		t.body.wake(true, 0)
		return
	}
	if t.reason() == "" {
		// An admitted task holds every permit in the queue. Cancel may take
		// it from there and give them back at once (see leaveReady).
		t.state.Or(readyBit)
	}
	if e.ready.Push(t) {
		e.goServe()
	}
}

// leaveReady takes t, an admitted task pushed to the ready queue, from
// there, and reports whether the caller now owns it. Cancel (byCancel)
// and the worker that pops t race for it. Cancel claims t before it
// tries. So a worker that finds t claimed leaves it to Cancel, which
// then owns it. A worker that wins marks t begun in the same step. A
// Cancel after that finds it begun, and its permits go back as the
// worker ends it. Its start is 0, Submitted: the zero value, which no
// one has written. The queue still links t until a worker pops it.
// The new owner never touches that link (Permits.Next).
func (t *task) leaveReady(byCancel bool) bool {
	for {
		s := t.state.Load()
		if s&readyBit == 0 || !byCancel && s&claimedBit != 0 {
			return false
		}
		next := s &^ readyBit
		if !byCancel {
			next |= startedBit
		}
		if t.state.CompareAndSwap(s, next) {
			return true
		}
	}
}

// serve is the body of a goroutine started for the ready queue's role.
func (e *GroupExecutor) serve() {
	growStack()
	defer e.crew.exit()
	if e.ready.Arrive() {
		e.work(e.take(), 0)
	}
}

// take takes the next task out of the ready queue, holding its role. It
// returns nil once the queue is empty and the role given up. It passes
// over a task that Cancel took from the queue, which Cancel ends.
func (e *GroupExecutor) take() *task {
	for {
		t, start := e.ready.Take()
		if start {
			e.goServe()
		}
		if t == nil || t.reason() != "" || t.leaveReady(false) {
			return t
		}
		// Take gave the role up with t. Claim it back for the next one.
		if !e.ready.Claim() {
			return nil
		}
	}
}

// work runs t, which got its last permit at start (an offset from its
// Submitted). Then, rather than ending, it runs each task that the released
// permits let run next on this goroutine. Then it runs tasks from the ready
// queue while it can take the queue's role. A task taken from the ready
// queue was admitted inside Submit, so its start is its Submitted (offset
// 0).
func (e *GroupExecutor) work(t *task, start int64) {
	var r *runner // taken for the first task it runs
	defer func() {
		if r != nil {
			e.runners.put(r)
		}
	}()
	for {
		for t != nil {
			if t.inline() { // a Do's caller runs it
				t.body.wake(true, start)
				break
			}
			if r == nil {
				r = e.runners.get(t)
			}
			t, start = e.runOne(r, t, start, handOffInline)
		}
		if !e.ready.Claim() {
			return
		}
		if t, start = e.take(), 0; t == nil {
			return
		}
	}
}

// carry is the body of a goroutine started for a task that can run. The task
// was handed its permits where the goroutine handing them on runs another
// task.
func (e *GroupExecutor) carry(t *task, start int64) {
	growStack()
	defer e.crew.exit()
	e.work(t, start)
}

// resume is the body of a goroutine started for a task handed a permit where
// no goroutine was free to carry it on (handOffSpawn).
func (e *GroupExecutor) resume(t *task) {
	growStack()
	defer e.crew.exit()
	s, start, turn := e.carryOn(t, noTime)
	if turn != nil {
		e.goResume(turn)
	}
	switch s {
	case stepRun:
		e.work(t, start)
	case stepEnded:
		e.work(e.handOn(&t.permits, handOffInline, noTime))
	}
}

// goTurnAway starts a goroutine that decides what becomes of t, which a
// queue threshold turned away for reason in a resume (see applyChanges).
func (e *GroupExecutor) goTurnAway(t *task, reason string) {
	e.crew.add()
	go e.resumeTurnedAway(t, reason)
}

// resumeTurnedAway is the body of a goroutine started by goTurnAway. It
// runs t, or ends it, as turnAway says, as resume would.
func (e *GroupExecutor) resumeTurnedAway(t *task, reason string) {
	growStack()
	defer e.crew.exit()
	if e.turnAway(t, reason) {
		e.work(t, 0)
		return
	}
	e.work(e.end(t, handOffInline, noTime))
}

// endCancelled is the body of a goroutine that owns a task a cancellation
// took out of its line. The task ends CANCELLED, as its wait would have.
// Whoever calls it has counted its goroutine in the crew.
func (e *GroupExecutor) endCancelled(t *task) {
	e.endOutOfLine(t, func() {
		e.finishCancelled(t)
	})
}

// goEndDisplaced starts a goroutine that ends t, a waiting task. Another
// task's walk took its queue slot under RejectDiscardOldest.
func (e *GroupExecutor) goEndDisplaced(t *task) {
	e.crew.add()
	go e.endDisplaced(t)
}

// endDisplaced is the body of a goroutine that owns a displaced task. The
// task ends REJECTED with ReasonDisplaced, and Await returns no error for
// it, as under RejectDiscard. It may hold permits of earlier layers, which
// it gives back as it ends.
func (e *GroupExecutor) endDisplaced(t *task) {
	e.endOutOfLine(t, func() {
		t.turnedAway(ReasonDisplaced, nil)
		t.tellRejected(e.listener(), ReasonDisplaced)
		now := t.since()
		e.finish(t, &outcome{
			status: StatusRejected,
			err:    &RejectedError{GroupKey: t.key(), TaskID: t.taskID(), Reason: ReasonDisplaced},
			start:  now, end: now,
		})
	})
}

// endOutOfLine ends t, which this goroutine owns out of every line, once
// decide has given it its outcome. Then it carries on with what t's permits
// went to. A listener told in decide may call runtime.Goexit. Then t still
// ends, and its hand-offs go to goroutines of their own.
func (e *GroupExecutor) endOutOfLine(t *task, decide func()) {
	growStack()
	defer e.crew.exit()
	how := handOffSpawn
	defer func() {
		if how == handOffSpawn {
			e.end(t, how, noTime)
		}
	}()
	decide()
	how = handOffInline
	e.work(e.end(t, how, noTime))
}

// endAllCancelled ends tasks a group sweep took out of their lines. Their
// permits and queue slots go back here, as a cancelled task's do (see
// cancel). So a task submitted once ShutdownGroup returns finds them free.
// Each task then ends on a goroutine of its own, which carries on those
// its permits went to.
func (e *GroupExecutor) endAllCancelled(swept []*task) {
	for _, t := range swept {
		t.permits.Release()
		e.goEndCancelled(t)
	}
}

// runOne runs t (or has its rejection handled), ends it, and returns the
// task to run next on this goroutine, if any. The tasks t's permits go to
// are carried on as done says, once t ended normally.
func (e *GroupExecutor) runOne(r *runner, t *task, start int64, done handOff) (next *task, nextStart int64) {
	how := handOffSpawn // until t ended normally: runtime.Goexit may be unwinding
	ended := noTime
	defer func() {
		if r.t.Load() != nil { // finish cleared it, unless t never ran
			r.running(nil, 0)
		}
		next, nextStart = e.end(t, how, ended)
	}()
	switch {
	case t.reason() != "":
		// Whoever waits for the permits t gave back need not wait for the
		// rejection handler.
		e.handOn(&t.permits, handOffSpawn, noTime)
		e.runRejected(t)
	case e.cancelledBeforeRun(t):
		// A context that ended while the last permit was granted still wins.
		// The function never starts on a cancelled context.
		e.finishCancelled(t)
	case e.policy.Load().tuned():
		r.running(t, t.permits.Submitted()+start)
		ended = e.runSampled(r, t, start)
	default:
		r.running(t, t.permits.Submitted()+start)
		ended = e.run(r, t, start)
	}
	how = done
	return nil, 0
}

// run calls t's function, which holds its permits since start (or none,
// under caller-runs). It finishes t with what the function returned, at the
// clock reading it returns. A panic is FAILED. So is runtime.Goexit, which
// finishes t as it unwinds, and so is a panic of a Do's function, which
// goes on up to Do's caller. r, the record showing t running, is cleared
// as t gives its permits back. (runSampled is run for adaptive limits.)
func (e *GroupExecutor) run(r *runner, t *task, start int64) (ended int64) {
	t.tell(e.listener(), notifyStarted)
	o := outcome{start: start, told: true, r: r}
	defer e.finish(t, &o)
	t.began(start)
	o.status, o.claimed, o.err = t.body.call(t, t.context())
	// No handle shows a Do's End. finish reads it for a listener, and a
	// task handed t's permits reads its own start. One return: the deferred
	// finish is copied to each.
	ended, o.end = noTime, endUnread
	if !t.inline() {
		ended = e.clock()
		o.end = ended - t.permits.Submitted()
	}
	return ended
}
