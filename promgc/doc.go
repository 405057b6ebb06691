// Package promgc exports a groupconc executor's state as Prometheus metrics.
//
// A Metrics has two parts. Its Collector reads the executor's Stats and
// AllGroupStats when Prometheus scrapes, so the gauges and counters cost
// nothing per task. Its Listener, installed through the executor's policy,
// feeds the wait and run histograms and counts rejections by reason. It
// is optional. Without it those three metrics are not exported.
//
//	m, err := promgc.New(promgc.Options{ExecutorName: "api"})
//	...
//	policy, err := groupconc.NewPolicyBuilder().
//		TaskLifecycleListener(m.Listener()). // or groupconc.Listeners(yours, m.Listener())
//		Build()
//	...
//	e := groupconc.New(policy)
//	prometheus.MustRegister(m.Collector(e))
//
// Metrics carry no per-group label unless asked. Group keys are
// unbounded, and so would be the series. Options.GroupClass or
// Options.GroupAllowlist turn on a "group" label. Options.MaxGroupValues
// caps its distinct values. Past the cap, and outside the allowlist,
// groups fold into the value Other.
package promgc
