package groupconc

import "github.com/kobe/groupconc/internal/groupstate"

// GroupStats is a point-in-time snapshot of one group.
type GroupStats struct {
	GroupKey string
	// Running counts tasks holding the group's concurrency permit; it never
	// exceeds MaxConcurrency. A task run under RejectCallerRuns or by
	// Rejection.Run holds no permit and is not counted.
	Running int
	// Waiting counts accepted tasks holding no concurrency permit yet,
	// whichever layer they wait at.
	Waiting int
	// InFlight counts tasks past the bulkhead: waiting for the concurrency
	// permit or running. It is counted even when the bulkhead is Unlimited.
	InFlight int
	// The limits resolved for the group.
	MaxConcurrency, MaxInFlight, QueueThreshold int
}

// ExecutorStats is a point-in-time snapshot of an executor.
type ExecutorStats struct {
	Groups                           int // groups known (created and not evicted)
	Running, Waiting, GlobalInFlight int // Running and Waiting summed over known groups
	GlobalMaxInFlight                int
	// Outcome counters count each task once, by the status its handle
	// reports; once every task has finished,
	// Succeeded+Failed+Cancelled+Rejected == Submitted.
	Submitted, Succeeded, Failed, Cancelled, Rejected uint64
}

// Stats returns a snapshot of e. It takes no lock that Submit needs, so it
// may be polled often; with many groups it costs a pass over them. Counts
// are read one by one while tasks move, so they are exact only when the
// executor is still.
func (e *GroupExecutor) Stats() ExecutorStats {
	s := ExecutorStats{
		GlobalInFlight:    e.global.InFlight(),
		GlobalMaxInFlight: e.policy.globalInFlight,
		Submitted:         e.submitted.Load(),
		Succeeded:         e.succeeded.Load(),
		Failed:            e.failed.Load(),
		Cancelled:         e.cancelled.Load(),
		Rejected:          e.rejected.Load(),
	}
	e.groups.Range(func(g *groupstate.Group) bool {
		running, waiting, _ := g.Counts()
		s.Groups++
		s.Running += running
		s.Waiting += waiting
		return true
	})
	return s
}

// GroupStats returns a snapshot of groupKey's group, and false if no such
// group exists: never used, or evicted.
func (e *GroupExecutor) GroupStats(groupKey string) (GroupStats, bool) {
	g, ok := e.groups.Lookup(groupKey)
	if !ok {
		return GroupStats{}, false
	}
	running, waiting, inFlight := g.Counts()
	l := g.Limits()
	return GroupStats{
		GroupKey:       groupKey,
		Running:        running,
		Waiting:        waiting,
		InFlight:       inFlight,
		MaxConcurrency: l.Concurrency,
		MaxInFlight:    l.MaxInFlight,
		QueueThreshold: l.QueueThreshold,
	}, true
}
