// Package groupconc runs tasks with per-group concurrency control, so that
// one tenant, endpoint or job class cannot starve the others.
//
// Every task carries a group key. Groups run in parallel; inside a group
// tasks run in parallel too, but never more than the group's concurrency
// limit. A GroupPolicy, built once with NewPolicyBuilder, sets the limits:
//
//   - concurrency per group: an explicit map, then a resolver function, then
//     a default (1);
//   - an optional bulkhead per group: how many of its tasks may be in flight
//     (waiting for a concurrency permit or running);
//   - an optional global in-flight cap across all groups;
//   - optional queue thresholds bounding how many tasks may wait, globally
//     and per group, with a rejection policy (abort, discard, caller-runs)
//     or a custom RejectionHandler for the tasks turned away.
//
// Submit never waits for a permit: it returns a TaskHandle at once (the
// listener, resolvers and backlog warnings it calls inline must be quick).
// Its context is the task's parent: ending it cancels the task. The task takes its
// permits in a fixed order (global, bulkhead, concurrency; under
// IsolationFairShare bulkhead, concurrency, then a global permit shared
// fairly among the groups by weight), runs on a goroutine owned by the
// executor and releases them in reverse. A task that
// has to wait for a permit waits as a record in a line, not as a parked
// goroutine: a group's tasks of one priority start in the order they were
// submitted, and a new task never passes a waiting one of its priority or
// a higher one. The
// handle awaits the typed GroupResult (with a deadline, through Await) or
// cancels the task.
// ExecuteAll runs a batch and returns every result in input order, without
// stopping at the first failure.
//
// SubmitWith refines one submission: with Block, a producer whose task
// finds its queue full waits for a slot instead of losing the task
// (lossless backpressure), bounded by its context and MaxWait; with a
// Priority, the task is served before lower-priority tasks waiting in the
// same line. Under RejectDiscardOldest a task that finds its queue full
// takes the place of the oldest waiting task of the lowest priority.
//
// A task ends SUCCESS, FAILED (an error, a panic, runtime.Goexit),
// CANCELLED (its context, its handle, ShutdownGroup, EvictGroup, Close) or
// REJECTED (a queue threshold, a Block wait past its MaxWait, or displaced
// by a newer task). Panics never escape: they become FAILED
// results carrying a *PanicError.
//
// UpdatePolicy changes the limits of a running executor without dropping a
// task, and IdleGroupTTL forgets groups that have been idle, so unbounded
// key spaces cost bounded memory. ParsePolicy reads a policy's limits from
// JSON (MarshalJSON writes them back); SetGroupOverride changes one live
// group's limits above the policy; Explain and ExplainGroup say which
// setting decided each limit of a group. With AdaptiveConcurrency (and,
// under fair share, AdaptiveGlobal) a limit follows what the backend the
// tasks call can take: each finished task's LimitSample goes to an
// AdaptiveLimit (package adapt has two), whose answer is applied as a live
// change.
//
// A TaskLifecycleListener observes every task's events (Listeners combines
// several), Stats, GroupStats and AllGroupStats give cheap snapshots of
// what is running and waiting, and PressureWarnings reports a group whose
// backlog grows too large or too old. Shutdown drains the executor
// gracefully; Close cancels everything.
package groupconc
