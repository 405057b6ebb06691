package adapt_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
)

// tenants is two groups under fair share, each with a limit of
// groupLimit, under a global cap of cap. The group limits adapt if group
// is set (their queue thresholds follow them); otherwise each group has a
// queue threshold of 1. The cap adapts if global is set.
func tenants(name string, groupLimit, cap int, group, global func(string, int, int) groupconc.AdaptiveLimit) setup {
	return setup{name: name, global: true, build: func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
		b = b.Isolation(groupconc.IsolationFairShare).DefaultMaxConcurrencyPerGroup(groupLimit).GlobalMaxInFlight(cap)
		if group != nil {
			b = b.AdaptiveConcurrency(groupconc.AdaptiveConfig{New: group, Min: 1, QueueFactor: queueScale})
		} else {
			b = b.DefaultQueueThresholdPerGroup(1)
		}
		if global != nil {
			b = b.AdaptiveGlobal(groupconc.AdaptiveConfig{New: global, Min: 1})
		}
		return b
	}}
}

// tenantAlgos are the algorithms the tenant scenarios run with.
var tenantAlgos = []struct {
	name string
	new  func(string, int, int) groupconc.AdaptiveLimit
}{
	{"gradient", adapt.GradientConfig{}.New},
	{"aimd", adapt.AIMDConfig{Timeout: 2 * fcfsService}.New},
}

// twoTenants is tenant X (group 0) and Y (group 1) at rate tasks per
// second each. X's backend has servers, and from degradeAt on servers/8.
// If shared, Y calls the same backend; otherwise one of its own, of
// servers.
func twoTenants(servers, rate float64, shared bool, seed uint64) scenario {
	const degradeAt = 4 * time.Second
	sc := fcfsScenario("tenants", servers, rate, callsWait, 12*time.Second, seed)
	sc.rates = []float64{rate, rate}
	sc.steps = []step{{0, servers, 0}, {degradeAt, servers / 8, 0}}
	if !shared {
		sc.backends = []int{0, 1}
		sc.steps = append(sc.steps, step{0, servers, 1})
	}
	sc.phases = []phase{{"degraded", degradeAt + 3*time.Second, sc.duration, 0}}
	return sc
}

// meanLimits returns the mean global cap and the mean limit of each group
// over ph.
func meanLimits(o outcome, ph phase) (global float64, groups []float64) {
	n := 0
	for _, k := range o.trace {
		if k.at < ph.start || k.at >= ph.end {
			continue
		}
		n++
		global += float64(k.limit)
		groups = append(groups[:0:0], groups...)
		for g, l := range k.groups {
			if g == len(groups) {
				groups = append(groups, 0)
			}
			groups[g] += float64(l)
		}
	}
	for g := range groups {
		groups[g] /= float64(n)
	}
	return global / float64(n), groups
}

// One tenant's backend degrades eightfold: its own adaptive limit handles
// that, and the adaptive global cap does not fall for it, so the other
// tenant keeps its goodput. A backend both share that degrades does bring
// the cap down.
func TestScenarioFCFSTenantsUnderAnAdaptiveGlobalCap(t *testing.T) {
	skipSlow(t)
	var b strings.Builder
	b.WriteString("two tenants under fair share, group limits 32 adaptive, global cap 64; X's backend degrades 16 → 2 servers at 4 s (own), or both's 32 → 4 with the group limits fixed at 32 (shared); figures from 7 s to 12 s\n")
	b.WriteString("| algorithm | seed | backend | Y's goodput, cap adaptive | Y's goodput, cap fixed | ratio | X's goodput | mean cap | mean limits X, Y |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, seed := range fcfsSeeds {
		for _, al := range tenantAlgos {
			own := twoTenants(16, 0.7*16/fcfsService.Seconds(), false, seed)
			outs := runAll(t, own, []setup{
				tenants(al.name, 32, 64, al.new, al.new),
				tenants(al.name+", cap fixed", 32, 64, al.new, nil),
			})
			ph := own.phases[0]
			got, fixed := measure(outs[0], ph, 2), measure(outs[1], ph, 2)
			capMean, lims := meanLimits(outs[0], ph)
			ratio := got.perGroup[1] / fixed.perGroup[1]
			fmt.Fprintf(&b, "| %s | %d | own | %.0f/s | %.0f/s | %.3f | %.0f/s | %.1f | %.1f, %.1f |\n", al.name, seed, got.perGroup[1], fixed.perGroup[1], ratio, got.perGroup[0], capMean, lims[0], lims[1])
			if ratio < 0.9 {
				t.Errorf("%s, seed %d: Y's goodput %.0f/s under an adaptive cap, want >= 0.9 × its %.0f/s under a fixed one", al.name, seed, got.perGroup[1], fixed.perGroup[1])
			}

			// The groups' limits fixed, so that the cap alone can act.
			shared := twoTenants(32, 0.45*32/fcfsService.Seconds(), true, seed)
			so := simulate(t, shared, tenants(al.name, 32, 64, nil, al.new))
			sm := measure(so, ph, 2)
			capMean, lims = meanLimits(so, ph)
			fmt.Fprintf(&b, "| %s | %d | shared | %.0f/s | | | %.0f/s | %.1f | %.1f, %.1f |\n", al.name, seed, sm.perGroup[1], sm.perGroup[0], capMean, lims[0], lims[1])
			if capMean > 32 {
				t.Errorf("%s, seed %d: a shared backend degraded, the global cap's mean is %.1f, want <= 32", al.name, seed, capMean)
			}

			// Group limits equal to the cap: the cap, not X's own
			// limit, stops X first, and X's limit must fall all the same.
			rate := 0.3 * 16 / fcfsService.Seconds()
			trap := twoTenants(16, rate, false, seed)
			to := simulate(t, trap, tenants(al.name, 16, 16, al.new, al.new))
			tm := measure(to, ph, 2)
			capMean, lims = meanLimits(to, ph)
			fmt.Fprintf(&b, "| %s | %d | own, limits 16 = cap | %.0f/s of %.0f/s | | %.3f | %.0f/s | %.1f | %.1f, %.1f |\n", al.name, seed, tm.perGroup[1], rate, tm.perGroup[1]/rate, tm.perGroup[0], capMean, lims[0], lims[1])
			if tm.perGroup[1] < 0.9*rate || lims[0] > 5 {
				t.Errorf("%s, seed %d: group limits equal to the cap: Y's goodput %.0f/s of %.0f/s, X's limit %.1f, want >= 0.9 × and <= 5", al.name, seed, tm.perGroup[1], rate, lims[0])
			}
		}
	}
	t.Log("\n" + b.String())
}
