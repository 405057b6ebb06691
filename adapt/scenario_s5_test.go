package adapt_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
)

// The fifth scenario of docs/adaptive.md: tenants of different weights
// share a global cap that adapts.
func TestScenarioS5FairShareGlobal(t *testing.T) {
	skipSlow(t)
	const cores = 16
	total := 4 * cores / service.Seconds()
	shares := []float64{1, 1, 1, 1, 2, 2, 4, 4} // of 16
	var rates []float64
	for _, w := range shares {
		rates = append(rates, total*w/16)
	}
	sc := scenario{
		name: "S5", duration: 15 * time.Second,
		steps:   []step{{0, cores, 0}},
		rates:   rates,
		service: service, sigma: 0.3, deadline: deadline, seed: 5,
		phases: []phase{{"all", 0, 15 * time.Second, 5 * time.Second}},
	}
	// Eight groups of limit 16 each, two waiting at most, under fair
	// share; the global cap adapts from 64.
	base := func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
		return b.Isolation(groupconc.IsolationFairShare).DefaultMaxConcurrencyPerGroup(16).DefaultQueueThresholdPerGroup(2)
	}
	setups := []setup{{name: "gradient global cap", global: true, build: func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
		return base(b).GlobalMaxInFlight(ceiling).AdaptiveGlobal(groupconc.AdaptiveConfig{New: adapt.GradientConfig{}.New})
	}}}
	sweep := []int{8, 12, 16, 20, 24, 32, 64}
	for _, n := range sweep {
		setups = append(setups, setup{name: fmt.Sprintf("fixed global cap %d", n), global: true, build: func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
			return base(b).GlobalMaxInFlight(n)
		}})
	}
	outs := runAll(t, sc, setups)
	ph := sc.phases[0]
	var b strings.Builder
	fmt.Fprintf(&b, "S5: eight groups (arrival shares 1,1,1,1,2,2,4,4 of %.0f tasks/s, 4× the capacity of %d cores), fair share, group limit 16, group queue threshold 2\n", total, cores)
	b.WriteString("| setup | summed goodput | Jain's index | p99 submit→end | global cap 5-15 s (mean, CV) | trace hash |\n|---|---|---|---|---|---|\n")
	var stats []phaseStats
	bestGoodput := 0.0
	for i, o := range outs {
		m := measure(o, ph, len(rates))
		stats = append(stats, m)
		if i > 0 {
			bestGoodput = max(bestGoodput, m.goodput)
		}
		s := settle(o, ph)
		fmt.Fprintf(&b, "| %s | %.0f/s | %.3f | %v | %.1f, %.3f | %016x |\n", setups[i].name, m.goodput, jain(m.perGroup), m.p99.Round(100*time.Microsecond), s.mean, s.cv, o.hash)
	}
	t.Log("\n" + b.String())
	g := stats[0]
	if j := jain(g.perGroup); j < 0.95 {
		t.Errorf("Jain's index %.3f among the groups' goodput %v, want >= 0.95", j, g.perGroup)
	}
	if g.goodput < 0.9*bestGoodput {
		t.Errorf("summed goodput %.0f/s, want >= 0.9 × the best fixed cap's %.0f/s", g.goodput, bestGoodput)
	}
}
