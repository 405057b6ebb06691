package groupconc

import (
	"iter"
	"time"

	"github.com/kobe/groupconc/internal/groupstate"
)

// GroupStats is a point-in-time snapshot of one group.
type GroupStats struct {
	GroupKey string
	// Running counts tasks holding the group's concurrency permit. It
	// exceeds MaxConcurrency only while a lowered limit drains
	// (UpdatePolicy, an adaptive limit). A task run under RejectCallerRuns
	// or by Rejection.Run, or a Do inside a task, holds no permit and is
	// not counted.
	Running int
	// Waiting counts accepted tasks holding no concurrency permit yet,
	// whichever layer they wait at and whatever their priority. A task is
	// counted as it is accepted, a moment before it has its place in a
	// line. No count is kept per priority, so a snapshot stays small and
	// an exporter's series stay one per group. OldestWait shows a starved
	// priority.
	Waiting int
	// InFlight counts tasks past the bulkhead, waiting for the concurrency
	// permit or running. It is counted even when the bulkhead is Unlimited.
	InFlight int
	// The limits in force for the group are those resolved for it. Under
	// AdaptiveConcurrency, MaxConcurrency is its adaptive limit, and
	// QueueThreshold the threshold that follows it.
	MaxConcurrency, MaxInFlight, QueueThreshold int
	// Weight is the group's fair-share weight (1 unless IsolationFairShare
	// gives it another).
	Weight int
	// OldestWait is how long the group's oldest waiting task, of any
	// priority, has waited since Submit. It is 0 if no task waits.
	OldestWait time.Duration
	// Blocked counts callers of SubmitWith with Block waiting for a slot of
	// the group's queue. They are not tasks yet, and not in Waiting.
	Blocked int
	// Parent is the group's parent, or "" at the top. A parent's counts and
	// ages cover its whole subtree. Its RunningCost is the permits its
	// subtree's running tasks hold at its own limit.
	Parent string
	// RunningCost counts the permits its running tasks hold at its
	// concurrency limit: each task's cost, or the whole limit for a cost
	// above it, as the limit was when the task took it. It equals Running
	// while every task costs one permit.
	RunningCost int
	// WaitingGlobal counts the tasks of Waiting that wait for a global
	// permit. The global cap holds them back, not the group's own limits.
	WaitingGlobal int
	// OldestRunning is how long the group's longest-running task has run. It
	// is 0 if none runs. A task hung in its function shows here.
	OldestRunning time.Duration
	// Paused reports whether the group is paused.
	Paused bool
	// The group's tasks since the group was made, by the status their
	// handles report, counted as ExecutorStats counts them.
	Succeeded, Failed, Cancelled, Rejected uint64
}

// ExecutorStats is a point-in-time snapshot of an executor.
type ExecutorStats struct {
	Groups int // groups known (created and not evicted)
	// Running and Waiting count tasks of every group, including tasks of
	// evicted groups that have not finished yet. GlobalInFlight counts the
	// global permits they hold: a task's cost, or the whole cap for a cost
	// above it.
	Running, Waiting, GlobalInFlight int
	// GlobalMaxInFlight is the global limit in force. That is the policy's,
	// or under AdaptiveGlobal the adaptive one.
	GlobalMaxInFlight int
	// Blocked counts callers of SubmitWith with Block waiting for a queue
	// slot, of any group or the global queue.
	Blocked int
	// Outcome counters count each task once, by the status its handle
	// reports. Once every task has finished,
	// Succeeded+Failed+Cancelled+Rejected == Submitted.
	Submitted, Succeeded, Failed, Cancelled, Rejected uint64
}

// Stats returns a snapshot of e. It reads a few counters kept as tasks move,
// whatever the number of groups, and takes no lock, so it may be polled as
// often as wanted. The counters are read one by one while tasks move, so
// they are exact only when the executor is still.
func (e *GroupExecutor) Stats() ExecutorStats {
	if !e.made() {
		return ExecutorStats{}
	}
	e.groups.ForgetIdle()
	running, waiting, inFlight := e.global.Counts()
	done := e.gate.outcomes()
	return ExecutorStats{
		Groups:            e.groups.Len(),
		Running:           running,
		Waiting:           waiting,
		GlobalInFlight:    inFlight,
		GlobalMaxInFlight: e.global.Limit(),
		Blocked:           e.global.Blocked(),
		Submitted:         e.gate.submitted(),
		Succeeded:         done[outcomeIndex(StatusSuccess)],
		Failed:            done[outcomeIndex(StatusFailed)],
		Cancelled:         done[outcomeIndex(StatusCancelled)],
		Rejected:          done[outcomeIndex(StatusRejected)],
	}
}

// GroupStats returns a snapshot of groupKey's group. It returns false if no
// such group exists, because it was never used or was evicted.
//
// A group's snapshot costs a few counters, and a parent's adds up its
// subtree: it costs the parent's descendants remembered, or every active
// group when those are fewer. So a dashboard may read the parents of the
// groups it shows one by one. For every group, ActiveGroupStats costs one
// pass over what is active.
func (e *GroupExecutor) GroupStats(groupKey string) (GroupStats, bool) {
	if !e.made() {
		return GroupStats{}, false
	}
	e.groups.ForgetIdle()
	g, ok := e.groups.Lookup(groupKey)
	if !ok {
		return GroupStats{}, false
	}
	if !g.HasChildren() {
		return e.groupStats(g, e.oldestRunning(map[*groupstate.Group[task]]bool{g: true}), new(subtrees)), true
	}
	// A parent's counts add up its subtree's. Its descendants are read
	// when they are fewer than the active groups, else every active group
	// is, as by ActiveGroupStats. So its snapshot costs the lesser.
	if within, ok := e.groups.Within(g, e.groups.ActiveLen()); ok {
		return e.subtreeStats(g, within), true
	}
	return e.groupStats(g, e.oldestRunning(nil), new(subtrees)), true
}

// AllGroupStats returns an iterator over a snapshot of every known group,
// one GroupStats each, in no particular order. It holds no lock while it
// yields, so the loop body may call into the executor. A group created or
// forgotten during the loop may or may not be seen. It visits every group
// remembered, idle ones included. ActiveGroupStats visits only the groups
// with something going on.
func (e *GroupExecutor) AllGroupStats() iter.Seq[GroupStats] {
	return e.snapshots(false)
}

// ActiveGroupStats returns an iterator over a snapshot of every group with
// something going on, one GroupStats each, in no particular order. That is
// a group with a task running, waiting or in flight, or a caller blocked
// in SubmitWith, or a group paused by its own override. A group under a
// paused ancestor, with nothing else going on, is left out, as its
// ancestor stands for it. The executor keeps these groups in a
// list of their own, so the snapshot costs what is active. AllGroupStats
// costs every group remembered, idle ones included. With unbounded keys
// (one group per user or address) that may be millions, so a dashboard or
// exporter polling every second should use this instead.
//
// It holds no lock while it yields, so the loop body may call into the
// executor. A group that turns active or idle during the loop may or may
// not be seen. A group with nothing to show is left out.
func (e *GroupExecutor) ActiveGroupStats() iter.Seq[GroupStats] {
	return e.snapshots(true)
}

// snapshots yields a snapshot of every group, or of the active ones. An
// active group with nothing to show is left out: its last task is on its
// way out, or not yet in.
func (e *GroupExecutor) snapshots(active bool) iter.Seq[GroupStats] {
	return func(yield func(GroupStats) bool) {
		if !e.made() {
			return
		}
		e.groups.ForgetIdle()
		oldest := e.oldestRunning(nil)
		var sub subtrees // made for the first parent, if any
		each := e.groups.Range
		if active {
			each = e.groups.RangeActive
		}
		each(func(g *groupstate.Group[task]) bool {
			st := e.groupStats(g, oldest, &sub)
			if active && st.Running == 0 && st.Waiting == 0 && st.InFlight == 0 && st.Blocked == 0 && !g.Limits().Paused {
				return true
			}
			return yield(st)
		})
	}
}

// oldestRunning returns when each group's oldest running task started, of
// the groups in in alone, if it is not nil. It costs what runs, not what is
// remembered.
func (e *GroupExecutor) oldestRunning(in map[*groupstate.Group[task]]bool) map[*groupstate.Group[task]]int64 {
	m := make(map[*groupstate.Group[task]]int64)
	e.runners.oldest(func(of *groupstate.Group[task], start int64) {
		if s, ok := m[of]; (in == nil || in[of]) && (!ok || start < s) {
			m[of] = start
		}
	})
	return m
}

// groupStats returns g's snapshot. oldest says when the oldest running
// task of each group started, of g's subtree at least (oldestRunning). sub
// is what the parents' subtrees add, made once for the snapshot.
func (e *GroupExecutor) groupStats(g *groupstate.Group[task], oldest map[*groupstate.Group[task]]int64, sub *subtrees) GroupStats {
	start, runs := oldest[g]
	running, waiting, inFlight := g.Counts()
	l := g.Limits()
	n := g.Outcomes()
	var age time.Duration
	if runs {
		age = max(time.Duration(e.clock()-start), 0)
	}
	st := GroupStats{
		GroupKey:       g.Key(),
		Running:        running,
		Waiting:        waiting,
		InFlight:       inFlight,
		MaxConcurrency: l.Concurrency,
		MaxInFlight:    l.MaxInFlight,
		QueueThreshold: l.QueueThreshold,
		Weight:         l.Weight,
		OldestWait:     time.Duration(g.OldestWait(e.clock())),
		Blocked:        g.Blocked(),
		RunningCost:    g.RunningCost(),
		WaitingGlobal:  g.WaitingGlobal(),
		OldestRunning:  age,
		Paused:         g.Paused(),
		Succeeded:      n[outcomeIndex(StatusSuccess)],
		Failed:         n[outcomeIndex(StatusFailed)],
		Cancelled:      n[outcomeIndex(StatusCancelled)],
		Rejected:       n[outcomeIndex(StatusRejected)],
	}
	if p := g.Parent(); p != nil {
		st.Parent = p.Key()
	}
	if g.HasChildren() {
		e.subtreesOf(sub, oldest)[g].addTo(&st)
		st.RunningCost += g.SubtreeCost()
	}
	// Running and RunningCost add counters read one after another, so a
	// permit handed from one task to the next between two reads may be
	// counted twice. Every running task holds a permit of g's concurrency
	// limit, read here in one load, and at least one of RunningCost's. So
	// these bounds are exact when g is still, and never let a snapshot
	// show more running than the limit lets run.
	_, held, _ := g.Held()
	st.RunningCost = min(st.RunningCost, held)
	st.Running = min(st.Running, st.RunningCost)
	// WaitingGlobal is a part of Waiting, read apart from it.
	st.WaitingGlobal = min(st.WaitingGlobal, st.Waiting)
	return st
}

// subtrees is what each parent's snapshot adds for its subtree: the
// counts and ages of its descendants with tasks. g's bulkhead already
// counts its subtree's tasks in flight, its outcome counters their
// outcomes, and SubtreeCost their permits. An idle child adds nothing. So
// one pass over the active groups, and the busy ones evicted, adds each
// up its path, and a snapshot costs what is active, not every child
// remembered.
type subtrees struct {
	made bool
	by   map[*groupstate.Group[task]]*subtree
}

type subtree struct {
	running, waiting, waitingGlobal, blocked int
	oldestWait, oldestRunning                time.Duration
}

// addTo adds t, nil for a subtree with no task, to st.
func (t *subtree) addTo(st *GroupStats) {
	if t == nil {
		return
	}
	st.Running += t.running
	st.Waiting += t.waiting
	st.WaitingGlobal += t.waitingGlobal
	st.Blocked += t.blocked
	st.OldestWait = max(st.OldestWait, t.oldestWait)
	st.OldestRunning = max(st.OldestRunning, t.oldestRunning)
}

// ownSubtree returns d's own counts as a subtree's, at now. oldest has
// when d's running tasks started, if read.
func ownSubtree(d *groupstate.Group[task], now int64, oldest map[*groupstate.Group[task]]int64) subtree {
	running, waiting, _ := d.Counts()
	x := subtree{running, waiting, d.WaitingGlobal(), d.Blocked(), time.Duration(d.OldestWait(now)), 0}
	if start, ok := oldest[d]; ok {
		x.oldestRunning = time.Duration(now - start)
	}
	return x
}

// add adds x, a descendant's own, to t.
func (t *subtree) add(x subtree) {
	t.running += x.running
	t.waiting += x.waiting
	t.waitingGlobal += x.waitingGlobal
	t.blocked += x.blocked
	t.oldestWait = max(t.oldestWait, x.oldestWait)
	t.oldestRunning = max(t.oldestRunning, x.oldestRunning)
}

// subtreesOf makes s, once, and returns it by parent.
func (e *GroupExecutor) subtreesOf(s *subtrees, oldest map[*groupstate.Group[task]]int64) map[*groupstate.Group[task]]*subtree {
	if s.made {
		return s.by
	}
	s.made, s.by = true, make(map[*groupstate.Group[task]]*subtree)
	now := e.clock()
	seen := make(map[*groupstate.Group[task]]bool) // one evicted as the pass runs is in two places
	var add func(d *groupstate.Group[task])
	add = func(d *groupstate.Group[task]) {
		if seen[d] {
			return
		}
		seen[d] = true
		x := ownSubtree(d, now, oldest)
		for a := d.Parent(); a != nil; a = a.Parent() {
			t := s.by[a]
			if t == nil {
				t = new(subtree)
				s.by[a] = t
			}
			t.add(x)
		}
		for _, c := range e.groups.Departed(d) {
			add(c)
		}
	}
	e.groups.RangeActive(func(d *groupstate.Group[task]) bool {
		add(d)
		return true
	})
	return s.by
}
