// Package adapt holds limit algorithms for groupconc's adaptive limits: a
// group's concurrency limit (groupconc.PolicyBuilder.AdaptiveConcurrency),
// or the global cap under fair share (AdaptiveGlobal), that follows what
// the backend the tasks call can take.
//
// Each algorithm is a groupconc.AdaptiveLimit: it is given one sample per
// finished task (its run time, without its wait in line; its outcome; the
// running count and the limit when it started) and returns the limit it
// wants. The executor keeps that within [min, the limit the policy
// resolves], starting at the resolved limit, and applies it as a live
// limit change: a raised limit starts waiting tasks at once, a lowered one
// lets running tasks finish.
//
//   - Gradient compares a windowed percentile of the run times with a
//     baseline of the run time without queueing, and sets the limit to the
//     concurrency the backend served the window at, scaled by how much
//     slower than the baseline it was (Vegas' and Gradient2's idea).
//   - AIMD raises the limit by one per limit's worth of healthy samples and
//     cuts it by a factor on each sign of overload: a timeout, a failure,
//     or a run time above a threshold.
//
// Both take their configuration's zero value as sensible defaults, and
// each configuration's New method plugs into groupconc.AdaptiveConfig:
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
// What a sample says is decided by a Classify function: by default a
// success measures the backend, a task cancelled by its deadline signals
// overload (its run time is a lower bound), and other outcomes are
// ignored, so that work shed or cancelled never counts as fast success.
//
// The algorithms read time only from the samples (LimitSample.End), so
// they behave the same under testing/synctest's fake clock; they use no
// randomness.
package adapt
