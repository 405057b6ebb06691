package adapt_test

// The scenarios of docs/adaptive.md: adaptive limits against
// fixed ones on a simulated backend, in fake time. Run them, with their
// tables and the chart, with
//
//	go test ./adapt -run TestScenario -v
//
// They take a few seconds; under the race detector, which slows them
// tenfold, they are skipped (TestSimulationIsDeterministic still runs).

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
)

const (
	service    = 10 * time.Millisecond // mean work of a task, on one core
	deadline   = 5 * service           // from Submit: work past it is wasted
	queueScale = 0.5                   // queue threshold = ceil(queueScale × limit), fixed or adaptive
	ceiling    = 64                    // the limit an adaptive group resolves, and starts at
)

// gradient and aimd are the adaptive setups: a group resolving ceiling,
// whose limit and queue threshold adapt.
var (
	gradient = adaptive("gradient", adapt.GradientConfig{}.New)
	aimd     = adaptive("aimd", adapt.AIMDConfig{Timeout: 2 * service}.New)
)

func adaptive(name string, newLimit func(string, int, int) groupconc.AdaptiveLimit) setup {
	return setup{name: name, build: func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
		return b.DefaultMaxConcurrencyPerGroup(ceiling).
			AdaptiveConcurrency(groupconc.AdaptiveConfig{New: newLimit, Min: 1, QueueFactor: queueScale})
	}}
}

// fixed is a group whose limit is n, with the queue threshold that goes
// with it as it goes with an adaptive limit.
func fixed(n int) setup {
	return setup{name: fmt.Sprintf("fixed %d", n), build: func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
		return b.DefaultMaxConcurrencyPerGroup(n).DefaultQueueThresholdPerGroup(int(math.Ceil(queueScale * float64(n))))
	}}
}

// skipSlow skips a scenario sweep under the race detector and -short.
func skipSlow(t *testing.T) {
	if raceEnabled || testing.Short() {
		t.Skip("a sweep of simulations: run it without -race and -short (go test ./adapt -run TestScenario -v)")
	}
}

// runAll simulates sc under every setup, in parallel, and returns the
// outcomes in order.
func runAll(t *testing.T, sc scenario, setups []setup) []outcome {
	outs := make([]outcome, len(setups))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, su := range setups {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			outs[i] = simulate(t, sc, su)
		})
	}
	wg.Wait()
	return outs
}

// s1 steps the capacity 32 → 8 → 32 cores under Poisson arrivals at 75 %
// of the high capacity, so three times the low one.
func s1() scenario {
	const p = 15 * time.Second
	return scenario{
		name: "S1", duration: 3 * p,
		steps:   []step{{0, 32, 0}, {p, 8, 0}, {2 * p, 32, 0}},
		rates:   []float64{0.75 * 32 / service.Seconds()},
		service: service, sigma: 0.3, deadline: deadline, seed: 1,
		phases: []phase{
			{"32 cores", 0, p, 5 * time.Second},
			{"8 cores", p, 2 * p, 5 * time.Second},
			{"32 cores again", 2 * p, 3 * p, 5 * time.Second},
		},
	}
}

func TestScenarioS1CapacitySteps(t *testing.T) {
	skipSlow(t)
	sc := s1()
	sweep := []int{6, 8, 10, 12, 16, 24, 32, 64}
	setups := []setup{gradient, aimd}
	for _, n := range sweep {
		setups = append(setups, fixed(n))
	}
	outs := runAll(t, sc, setups)
	stats := make([][]phaseStats, len(outs))
	for i, o := range outs {
		for _, ph := range sc.phases {
			stats[i] = append(stats[i], measure(o, ph, 1))
		}
	}
	fixedAt := func(n int) []phaseStats { return stats[2+slices.Index(sweep, n)] }
	// The best fixed limit of each phase.
	best := make([]phaseStats, len(sc.phases))
	bestN := make([]int, len(sc.phases))
	for p := range sc.phases {
		for j, n := range sweep {
			if s := stats[2+j][p]; s.goodput > best[p].goodput {
				best[p], bestN[p] = s, n
			}
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "S1: capacity 32 → 8 → 32 cores, %.0f tasks/s, mean work %v, deadline %v, queue threshold %.1f × limit\n",
		sc.rates[0], service, deadline, queueScale)
	fmt.Fprintf(&b, "| setup | goodput, 32 cores | goodput, 8 cores | goodput, 32 cores again | p99 submit→end, 8 cores (settled / whole phase) | limit, 8 cores (mean, CV, settled after) | limit, 32 cores again | trace hash |\n|---|---|---|---|---|---|---|---|\n")
	row := func(name string, st []phaseStats, o *outcome) {
		fmt.Fprintf(&b, "| %s | %.0f/s | %.0f/s | %.0f/s | %v / %v |", name, st[0].goodput, st[1].goodput, st[2].goodput, st[1].p99.Round(100*time.Microsecond), st[1].p99All.Round(100*time.Microsecond))
		if o == nil {
			b.WriteString(" | | |\n")
			return
		}
		lo, hi := settle(*o, sc.phases[1]), settle(*o, sc.phases[2])
		fmt.Fprintf(&b, " %.1f, %.3f, %v | %.1f, %.3f, %v | %016x |\n", lo.mean, lo.cv, lo.after, hi.mean, hi.cv, hi.after, o.hash)
	}
	row("gradient", stats[0], &outs[0])
	row("aimd", stats[1], &outs[1])
	row("fixed 8", fixedAt(8), nil)
	row("fixed 32", fixedAt(32), nil)
	row(fmt.Sprintf("best fixed per phase (%d, %d, %d)", bestN[0], bestN[1], bestN[2]), best, nil)
	b.WriteString("\nthe gradient's limit (*) against the capacity (-):\n")
	b.WriteString(chart(outs[0], 17, ceiling))
	t.Log("\n" + b.String())

	g := stats[0]
	for p, ph := range sc.phases {
		if g[p].goodput < 0.9*best[p].goodput {
			t.Errorf("%s: goodput %.0f/s, want >= 0.9 × the best fixed limit's %.0f/s", ph.name, g[p].goodput, best[p].goodput)
		}
	}
	if low, f32 := g[1].goodput, fixedAt(32)[1].goodput; low < 1.5*f32 {
		t.Errorf("8 cores: goodput %.0f/s, want >= 1.5 × fixed 32's %.0f/s", low, f32)
	}
	for _, p := range []int{0, 2} {
		if hi, f8 := g[p].goodput, fixedAt(8)[p].goodput; hi < 1.5*f8 {
			t.Errorf("%s: goodput %.0f/s, want >= 1.5 × fixed 8's %.0f/s", sc.phases[p].name, hi, f8)
		}
	}
	if p99 := g[1].p99; p99 > 3*service {
		t.Errorf("8 cores: p99 submit to end %v, want <= %v", p99, 3*service)
	}
	for _, ph := range sc.phases[1:] {
		if s := settle(outs[0], ph); s.after > 5*time.Second || s.cv > 0.15 {
			t.Errorf("%s: the limit settled after %v with CV %.3f, want <= 5s and <= 0.15", ph.name, s.after, s.cv)
		}
	}

	// The figures docs/adaptive.md gives, to its precision.
	for p, ph := range sc.phases {
		if r := math.Round(g[p].goodput/best[p].goodput*100) / 100; r < 0.97 || r > 1 {
			t.Errorf("%s: %.3f of the best fixed limit's goodput, docs/adaptive.md says 0.97 to 1.00", ph.name, g[p].goodput/best[p].goodput)
		}
	}
	for p, within := range map[int]time.Duration{1: 200 * time.Millisecond, 2: 1700 * time.Millisecond} {
		if s := settle(outs[0], sc.phases[p]); s.after > within {
			t.Errorf("%s: the limit settled after %v, docs/adaptive.md says within %v", sc.phases[p].name, s.after, within)
		}
	}
	if r := math.Round(fixedAt(32)[1].goodput/best[1].goodput*100) / 100; r != 0.46 {
		t.Errorf("8 cores: fixed 32 keeps %.3f of the best fixed limit's goodput, docs/adaptive.md says 0.46", fixedAt(32)[1].goodput/best[1].goodput)
	}
	for name, c := range map[string]struct {
		st  []phaseStats
		doc [3]float64
	}{
		"gradient": {stats[0], [3]float64{2392, 792, 2318}},
		"aimd":     {stats[1], [3]float64{2392, 795, 2382}},
		"fixed 8":  {fixedAt(8), [3]float64{800, 797, 801}},
		"fixed 32": {fixedAt(32), [3]float64{2392, 367, 2389}},
	} {
		for p, want := range c.doc {
			if got := math.Round(c.st[p].goodput); got != want {
				t.Errorf("%s, %s: goodput %.0f/s, docs/adaptive.md's table says %.0f/s", name, sc.phases[p].name, got, want)
			}
		}
	}
}

func TestScenarioS4ColdStart(t *testing.T) {
	skipSlow(t)
	const cores = 16
	sc := scenario{
		name: "S4", duration: 15 * time.Second,
		steps:   []step{{0, cores, 0}},
		rates:   []float64{3 * cores / service.Seconds()},
		service: service, sigma: 0.3, deadline: deadline, seed: 4,
		phases: []phase{{"all", 0, 15 * time.Second, 10 * time.Second}},
	}
	sweep := []int{8, 10, 12, 14, 16, 20, 24, 32, 48, 64}
	setups := []setup{gradient, aimd}
	for _, n := range sweep {
		setups = append(setups, fixed(n))
	}
	outs := runAll(t, sc, setups)
	ph := sc.phases[0]
	goodput := make([]float64, len(outs))
	bestGoodput := 0.0
	for i, o := range outs {
		goodput[i] = measure(o, ph, 1).goodput
		if i >= 2 {
			bestGoodput = max(bestGoodput, goodput[i])
		}
	}
	// The best band: the fixed limits within 5 % of the best goodput,
	// widened to the nearest ones that are not (the sweep's resolution).
	first, last := -1, -1
	for j := range sweep {
		if goodput[2+j] >= 0.95*bestGoodput {
			if first < 0 {
				first = j
			}
			last = j
		}
	}
	lo, hi := 0, ceiling+1
	if first > 0 {
		lo = sweep[first-1]
	}
	if last+1 < len(sweep) {
		hi = sweep[last+1]
	}
	inBand := func(n float64) bool { return n > float64(lo) && n < float64(hi) }

	var b strings.Builder
	fmt.Fprintf(&b, "S4: a cold start at 3× the capacity of %d cores (%.0f tasks/s); best band: limits in (%d, %d)\n", cores, sc.rates[0], lo, hi)
	b.WriteString("| setup | goodput | p99 submit→end (10-15 s) | limit 10-15 s (mean, CV) | first in the band | in the band from (each second's mean) | longest stay at the minimum with capacity free | trace hash |\n|---|---|---|---|---|---|---|---|\n")
	report := make([]struct {
		first, from time.Duration
		atMin       int
		settle      settling
	}, 2)
	for i := range 2 {
		o := outs[i]
		r := &report[i]
		// From when the limit's mean over each second stays in the band
		// (a window's dip is noise, not a limit the backend runs at).
		perSecond := map[time.Duration][]int{}
		for _, k := range o.trace {
			perSecond[k.at.Truncate(time.Second)] = append(perSecond[k.at.Truncate(time.Second)], k.limit)
		}
		r.from = -1
		for sec := sc.duration - time.Second; sec >= 0; sec -= time.Second {
			sum := 0
			for _, n := range perSecond[sec] {
				sum += n
			}
			if !inBand(float64(sum) / float64(len(perSecond[sec]))) {
				break
			}
			r.from = sec
		}
		r.first = -1
		for _, k := range o.trace {
			if inBand(float64(k.limit)) {
				r.first = k.at
				break
			}
		}
		run := 0
		for _, k := range o.trace {
			if k.limit == 1 && float64(k.running) < k.cores {
				run++
				r.atMin = max(r.atMin, run)
			} else {
				run = 0
			}
		}
		r.settle = settle(o, ph)
		m := measure(o, ph, 1)
		fmt.Fprintf(&b, "| %s | %.0f/s | %v | %.1f, %.3f | %v | %v | %d windows | %016x |\n", setups[i].name, m.goodput, m.p99.Round(100*time.Microsecond), r.settle.mean, r.settle.cv, r.first, r.from, r.atMin, o.hash)
	}
	for j, n := range sweep {
		fmt.Fprintf(&b, "| fixed %d | %.0f/s | %v | | | | | |\n", n, goodput[2+j], measure(outs[2+j], ph, 1).p99.Round(100*time.Microsecond))
	}
	t.Log("\n" + b.String())

	g := report[0]
	if g.from < 0 || g.from > 10*time.Second {
		t.Errorf("the limit's mean over each second stays in the best band (%d, %d) from %v, want from 10s at the latest", lo, hi, g.from)
	}
	if g.atMin > 5 {
		t.Errorf("the limit sat at the minimum with capacity free for %d windows, want <= 5", g.atMin)
	}
}

// The trace of a seed is the same on every run: the executor, the backend
// and the algorithm see the same events in the same order, whatever the
// goroutines' interleaving (see onGrid).
func TestSimulationIsDeterministic(t *testing.T) {
	sc := s1()
	sc.duration = 6 * time.Second
	sc.steps = []step{{0, 32, 0}, {2 * time.Second, 8, 0}, {4 * time.Second, 32, 0}}
	a, b := simulate(t, sc, gradient), simulate(t, sc, gradient)
	if a.hash != b.hash {
		t.Fatalf("two runs of one seed traced %016x and %016x", a.hash, b.hash)
	}
	if a.changes == 0 {
		t.Fatal("the limit never changed: the run shows nothing")
	}
	t.Logf("trace hash %016x, %d limit changes", a.hash, a.changes)
}
