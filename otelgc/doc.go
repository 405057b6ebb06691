// Package otelgc exports a groupconc executor's state as OpenTelemetry
// metrics.
//
// A Metrics has two parts. Metrics.Observe registers a callback that reads
// the executor's Stats and AllGroupStats when the SDK collects, into
// observable instruments, so they cost nothing per task. Its Listener,
// installed through the executor's policy, records the wait and run
// duration histograms and counts rejections by reason. It is optional.
//
//	m, err := otelgc.New(otelgc.Options{ExecutorName: "api"}) // the global MeterProvider
//	...
//	policy, err := groupconc.NewPolicyBuilder().
//		TaskLifecycleListener(m.Listener()). // or groupconc.Listeners(yours, m.Listener())
//		Build()
//	...
//	e := groupconc.New(policy)
//	reg, err := m.Observe(e) // reg.Unregister() when e is done with
//
// Measurements carry no per-group attribute unless asked. Group keys are
// unbounded, and so would be the time series. Options.GroupClass or
// Options.GroupAllowlist turn on the groupconc.group attribute.
// Options.MaxGroupValues caps its distinct values. Past the cap, and
// outside the allowlist, groups fold into the value Other.
package otelgc
