// Package groupconc runs tasks with per-group concurrency control, so that
// one tenant, endpoint or job class cannot starve the others.
//
// Every task carries a group key. Groups run in parallel. Inside a group
// tasks run in parallel too, but never more than the group's concurrency
// limit. A GroupPolicy, built once with NewPolicyBuilder, sets the limits.
//
//   - The concurrency per group comes from an explicit map, then a resolver
//     function, then a default (1).
//   - An optional bulkhead per group bounds how many of its tasks may be in
//     flight, waiting for a concurrency permit or running.
//   - An optional global in-flight cap holds across all groups.
//   - Optional queue thresholds bound how many tasks may wait, globally and
//     per group. A rejection policy (abort, discard, caller-runs,
//     discard-oldest) or a custom RejectionHandler handles the tasks turned
//     away.
//
// Submit never waits for a permit. It returns a TaskHandle at once. It calls
// the listener, resolvers and backlog warnings inline, so they must be
// quick. Its context is the task's parent, and ending it cancels the task.
// The task takes its permits in a fixed order: global, bulkhead,
// concurrency. Under IsolationFairShare it is bulkhead, concurrency, then a
// global permit shared fairly among the groups by weight. The task runs on a
// goroutine owned by the executor and releases its permits in reverse. A
// task that has to wait for a permit waits as a record in a line, not as a
// parked goroutine. A group's tasks of one priority start in the order they
// were submitted. A new task never passes a waiting one of its priority or a
// higher one. The handle awaits the typed GroupResult (with a deadline,
// through Await) or cancels the task. ExecuteAll runs a batch and returns
// every result in input order, without stopping at the first failure.
//
// SubmitWith refines one submission. With Block, a producer whose task finds
// its queue full waits for a slot instead of losing the task. This is
// lossless backpressure, bounded by its context and MaxWait. With a
// Priority, the task is served before lower-priority tasks waiting in the
// same line. Under RejectDiscardOldest a task that finds its queue full
// takes the place of the oldest waiting task of the lowest priority.
//
// A task ends in one of four ways. It ends SUCCESS, or FAILED (an error, a
// panic, runtime.Goexit). It ends CANCELLED by its context, its handle,
// ShutdownGroup, EvictGroup or Close. It ends REJECTED by a queue threshold,
// a Block wait past its MaxWait, or displacement by a newer task. A task's
// panic never escapes. It becomes a FAILED result carrying a *PanicError.
// Do is the exception: it counts as FAILED, and the panic goes on up to its
// caller, as if fn had been called directly.
//
// UpdatePolicy changes the limits of a running executor without dropping a
// task. IdleGroupTTL forgets groups that have been idle, so unbounded key
// spaces cost bounded memory. ParsePolicy reads a policy's limits from JSON,
// and MarshalJSON writes them back. SetGroupOverride changes one live
// group's limits above the policy. Explain and ExplainGroup say which
// setting decided each limit of a group. With AdaptiveConcurrency, a limit
// follows what the backend the tasks call can take. Under fair share
// AdaptiveGlobal does the same for the global limit. Each finished task's
// LimitSample goes to an AdaptiveLimit, and package adapt has two. Its
// answer is applied as a live change.
//
// A TaskLifecycleListener observes every task's events, and Listeners
// combines several. Stats, GroupStats and AllGroupStats give cheap snapshots
// of what is running and waiting. PressureWarnings reports a group whose
// backlog grows too large or too old. Shutdown drains the executor
// gracefully, and Close cancels everything.
package groupconc
