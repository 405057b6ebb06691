// Package adapt holds limit algorithms for groupconc's adaptive limits.
// They move a group's concurrency limit (groupconc.PolicyBuilder's
// AdaptiveConcurrency), or the global cap under fair share
// (AdaptiveGlobal), to follow what the backend the tasks call can take.
//
// Each algorithm is a groupconc.AdaptiveLimit. It is given one sample per
// finished task and returns the limit it wants. A sample tells the task's
// run time, without its wait in line, and its outcome. It also tells the
// running count, the limit and the tasks of its group waiting in line
// when it started. The executor keeps the limit within [min, the limit
// the policy resolves], starting at the resolved limit. It applies it as
// a live limit change. A raised limit starts waiting tasks at once, and a
// lowered one lets running tasks finish.
//
//   - Gradient compares a windowed percentile of the run times with a
//     baseline, the run time without queueing. It sets the limit to the
//     concurrency the backend served the window at, scaled down by how
//     much slower than the baseline it ran (Vegas' and Gradient2's idea).
//   - AIMD raises the limit by one per limit's worth of healthy samples.
//     It cuts it by a factor on each sign of overload. That is a timeout,
//     a failure, or a run time above a threshold.
//
// Both take their configuration's zero value as sensible defaults. Each
// configuration's New method plugs into groupconc.AdaptiveConfig.
//
//	p, err := groupconc.NewPolicyBuilder().
//		DefaultMaxConcurrencyPerGroup(64).
//		AdaptiveConcurrency(groupconc.AdaptiveConfig{
//			New:         adapt.GradientConfig{}.New,
//			Min:         2,
//			QueueFactor: 1,
//		}).
//		Build()
//
// # What a sample says
//
// A Classify function decides what a sample says. By default a success
// measures the backend. A task cancelled by its deadline signals
// overload, and its run time is a lower bound. So does a task that failed
// with context.DeadlineExceeded, a deadline it set on its call (a client's
// timeout). Other outcomes are ignored, so work shed or cancelled never
// counts as fast success.
//
// A deadline that passes is overload, whatever the running count. A caller
// that gives up frees its permit, but the backend may still serve its
// call. So the running count then says less than the backend has to do.
// Gradient cuts a window in which over one task in ten ran out its
// deadline, and does not raise a limit in a window with any such task.
// AIMD cuts on each one.
//
// # Which limit binds
//
// Gradient tells three cases apart by the samples' Running, Limit and
// Waiting at each task's start.
//
//   - The limit binds: the group ran at its limit. Slow run times lower it
//     at once if far slower than the window's noise allows, or else after
//     two slow windows in a row.
//   - The load does not fill the limit: the group ran below it with no
//     task waiting. A backend may still queue, as one whose capacity fell
//     does at the same load. The limit then falls towards the concurrency
//     the backend served, once Patience windows in a row ran slow. One
//     slow window may be a burst.
//   - The group is held back: tasks of it waited while it ran below its
//     limit. The global cap, fair share or a parent group held them. The
//     other groups may be what slows the backend, so the limit waits
//     HeldPatience windows. An adaptive global cap acts on shared
//     overload well before that. Slowness that outlasts it is the
//     group's own.
//
// A limit rises only while its tasks start with three quarters of it
// running (Gradient's Utilisation; half for AIMD), so a limit the load
// does not fill stays near what the backend serves. A limit that holds a
// task of its own back is full, even when a costly task waits for more
// permits than are left: LimitSample.Running says so.
//
// # A line in front of servers
//
// A backend may serve calls first come, first served, on c servers. A
// connection pool or a thread pool does. There the run time of a task is
// set by the line it finds as it starts. While a limit fills, tasks find
// a shorter line than the limit lets build up. So their run times lag the
// limit. On a cold start under overload, Gradient halves the limit each
// window until the run times stop falling. It judges each step only by
// the tasks that started at a full limit. Then it seeds the baseline with
// the mean of the last two windows' run times. A start under light load
// waits until the running count stops climbing. Then the baseline is the
// least run time of the climb. A load just over the capacity builds its
// line slowly, and the later windows ran behind it.
//
// # The global cap
//
// Under AdaptiveGlobal the cap's algorithm takes every group's samples. It
// moves the cap only on overload the groups share. In each window
// (Gradient's, or AIMD's Window) it counts the samples by top-level group
// (LimitSample.TopGroupKey), as fair share shares the cap: a tenant that
// spreads its tasks over many users votes once. A group is slow if its mean
// run time exceeds its own baseline by twice Tolerance (Gradient), or if
// over one of its samples in ten signals overload. Overload is shared if
// more than half the voters are slow, and they gave more than half the
// samples of their votes. A group votes once it has given five samples,
// over as many windows as that takes, and its vote stands while it gives
// samples. So a tenant of long calls votes too. The groups of no vote yet
// vote together, as one group, if they gave five or more in the window: so
// many light tenants outvote one busy tenant in trouble. A window with one
// voter is shared by definition, while that group gives samples alone:
// overload of a group that joins it counts as its own until the window is
// judged. So one tenant whose backend degrades does not lower the cap for
// the others. Its own adaptive limit handles it. A backend that most of the
// load calls, and that degrades, does lower the cap. Until a tenant has
// ended a task, the cap has nothing of it: at a start, one tenant's
// overload counts as shared.
//
// A group's limit equal to the global cap is a trap. The cap stops the
// group first, so the group's own limit never binds. Gradient still
// lowers it after HeldPatience slow windows, and AIMD cuts on any
// timeout. Better still, give groups limits below the cap, so each
// group's own limit binds first. When the cap binds, tasks wait for it in
// their group's queue. That queue follows the group's limit, not the cap,
// so keep QueueFactor or the thresholds small.
//
// The algorithms read time only from the samples (LimitSample.End). So
// they behave the same under testing/synctest's fake clock. They use no
// randomness.
package adapt
