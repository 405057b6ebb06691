package groupconc

import (
	"fmt"
	"maps"
	"slices"
)

// check returns one line per bad setting of p, naming the field and its
// value. The weighted result reports whether any weight was set.
func (p *GroupPolicy) check(weighted bool) []string {
	var bad []string
	check := func(field string, n, least int) {
		if n < least {
			bad = append(bad, fmt.Sprintf("%s is %d, want >= %d", field, n, least))
		}
	}
	checkMap := func(field string, m map[string]int, least int) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k == "" {
				bad = append(bad, fmt.Sprintf("%s has an empty group key", field))
			}
			check(field+"["+quoted(k)+"]", m[k], least)
		}
	}
	checkMap("PerGroupMaxConcurrency", p.concurrency, 1)
	check("DefaultMaxConcurrencyPerGroup", p.defaultConc, 1)
	check("GlobalMaxInFlight", p.globalInFlight, 1)
	check("DefaultMaxInFlightPerGroup", p.defaultInFlight, 1)
	checkMap("PerGroupMaxInFlight", p.inFlight, 1)
	check("GlobalQueueThreshold", p.globalQueue, 0)
	check("DefaultQueueThresholdPerGroup", p.defaultQueue, 0)
	checkMap("PerGroupQueueThreshold", p.queue, 0)
	if p.rejection < RejectAbort || p.rejection > RejectDiscardOldest {
		bad = append(bad, fmt.Sprintf("RejectionPolicy is %d, want RejectAbort, RejectDiscard, RejectCallerRuns or RejectDiscardOldest", int(p.rejection)))
	}
	switch p.isolation {
	case IsolationOff:
		if weighted {
			bad = append(bad, "PerGroupWeight, WeightResolver and DefaultWeightPerGroup need Isolation(IsolationFairShare), have IsolationOff")
		}
	case IsolationFairShare:
		if p.globalQueue != Unlimited {
			bad = append(bad, fmt.Sprintf("GlobalQueueThreshold is %d, want Unlimited under Isolation(IsolationFairShare): the per-group threshold bounds the global wait", p.globalQueue))
		}
	default:
		bad = append(bad, fmt.Sprintf("Isolation is %d, want IsolationOff or IsolationFairShare", int(p.isolation)))
	}
	checkMap("PerGroupWeight", p.weights, 1)
	check("DefaultWeightPerGroup", p.defaultWeight, 1)
	if p.idleTTL < 0 {
		bad = append(bad, fmt.Sprintf("IdleGroupTTL is %v, want >= 0", p.idleTTL))
	}
	for _, f := range []struct {
		name string
		bad  bool
		v    any
	}{
		{"PressureConfig.BacklogCount", p.pressure.BacklogCount < 0, p.pressure.BacklogCount},
		{"PressureConfig.BacklogAge", p.pressure.BacklogAge < 0, p.pressure.BacklogAge},
		{"PressureConfig.Cooldown", p.pressure.Cooldown < 0, p.pressure.Cooldown},
	} {
		if f.bad {
			bad = append(bad, fmt.Sprintf("%s is %v, want >= 0", f.name, f.v))
		}
	}
	return append(bad, p.checkAdaptive()...)
}

// callResolver reports the resolver's value, or false if it panicked.
func callResolver(f func(string) int, groupKey string) (n int, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return f(groupKey), true
}

func or(v *int, def int) int {
	if v == nil {
		return def
	}
	return *v
}

func bitIf(cond bool, b defaultBits) defaultBits {
	if cond {
		return b
	}
	return 0
}
