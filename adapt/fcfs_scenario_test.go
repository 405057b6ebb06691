package adapt_test

// The scenarios on a backend of another kind: a line in front of c
// servers, served first come, first served (a connection pool, a server
// with a pool of threads), with Erlang-8 service times of mean 20ms and a
// deadline of three times that from Submit. Goodput counts the tasks that
// succeed within their deadline. Each runs for several seeds:
//
//	go test ./adapt -run TestScenarioFCFS -v

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kobe/groupconc/adapt"
)

const (
	fcfsService  = 20 * time.Millisecond
	fcfsDeadline = 3 * fcfsService
)

// fcfsSeeds are the seeds each FCFS scenario runs with.
var fcfsSeeds = []uint64{1, 2, 3}

// The adaptive setups of the FCFS scenarios.
var (
	fcfsGradient = adaptive("gradient", adapt.GradientConfig{}.New)
	fcfsAIMD     = adaptive("aimd", adapt.AIMDConfig{Timeout: 2 * fcfsService}.New)
)

// fcfsScenario is one group on one backend of servers, at rate tasks per
// second, whose callers call as calls says.
func fcfsScenario(name string, servers, rate float64, c calls, d time.Duration, seed uint64) scenario {
	return scenario{
		name: name, duration: d,
		steps:   []step{{0, servers, 0}},
		rates:   []float64{rate},
		service: fcfsService, deadline: fcfsDeadline, seed: seed,
		fcfs: true, erlang: 8, calls: c,
	}
}

// verdict is one adaptive setup's figures in one phase, against the best
// fixed limit's.
type verdict struct {
	setup, phase string
	seed         uint64
	got, best    phaseStats
	bestN        int
}

// againstFixed runs sc under each adaptive setup and each fixed limit of
// sweep, and returns, per adaptive setup and phase, its figures and the
// best fixed limit's.
func againstFixed(t *testing.T, sc scenario, adaptives []setup, sweep []int) []verdict {
	setups := append([]setup(nil), adaptives...)
	for _, n := range sweep {
		setups = append(setups, fixed(n))
	}
	outs := runAll(t, sc, setups)
	var vs []verdict
	for p, ph := range sc.phases {
		var best phaseStats
		bestN := 0
		for j, n := range sweep {
			if s := measure(outs[len(adaptives)+j], ph, len(sc.rates)); s.goodput > best.goodput {
				best, bestN = s, n
			}
		}
		for i, su := range adaptives {
			vs = append(vs, verdict{setup: su.name, phase: sc.phases[p].name, seed: sc.seed,
				got: measure(outs[i], ph, len(sc.rates)), best: best, bestN: bestN})
		}
	}
	return vs
}

// report logs vs as a table and checks that each goodput is at least 0.9
// of the best fixed limit's, and each p99 run time at most maxRun (per
// setup; 0: not checked).
func report(t *testing.T, title string, vs []verdict, maxRun map[string]time.Duration) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n| setup | phase | seed | goodput | best fixed (limit) | ratio | p99 run | best fixed's p99 run |\n|---|---|---|---|---|---|---|---|\n", title)
	for _, v := range vs {
		ratio := v.got.goodput / v.best.goodput
		fmt.Fprintf(&b, "| %s | %s | %d | %.0f/s | %.0f/s (%d) | %.3f | %v | %v |\n", v.setup, v.phase, v.seed,
			v.got.goodput, v.best.goodput, v.bestN, ratio, v.got.p99Run.Round(100*time.Microsecond), v.best.p99Run.Round(100*time.Microsecond))
		if ratio < 0.9 {
			t.Errorf("%s, %s, seed %d: goodput %.0f/s, want >= 0.9 × the best fixed limit's %.0f/s", v.setup, v.phase, v.seed, v.got.goodput, v.best.goodput)
		}
		if m := maxRun[v.setup]; m > 0 && v.got.p99Run > m {
			t.Errorf("%s, %s, seed %d: p99 run time %v, want <= %v", v.setup, v.phase, v.seed, v.got.p99Run, m)
		}
	}
	t.Log("\n" + b.String())
}

// The capacity steps 16 → 4 → 32 servers and the load follows it, at 90 %
// of each: at 4 servers the load no longer fills the limit the group
// started at, and the line in the backend must still not grow.
func TestScenarioFCFSCapacityDropsAndLoadFollows(t *testing.T) {
	skipSlow(t)
	const p = 7 * time.Second
	var vs []verdict
	for _, seed := range fcfsSeeds {
		sc := fcfsScenario("capacity", 16, 0.9*16/fcfsService.Seconds(), callsWait, 3*p, seed)
		sc.steps = []step{{0, 16, 0}, {p, 4, 0}, {2 * p, 32, 0}}
		sc.load = []step{{p, 0.25, 0}, {2 * p, 2, 0}}
		sc.phases = []phase{
			{"16 servers", 0, p, 3 * time.Second},
			{"4 servers", p, 2 * p, 3 * time.Second},
			{"32 servers", 2 * p, 3 * p, 3 * time.Second},
		}
		for i := range sc.phases {
			sc.phases[i].start += sc.phases[i].settle // judged once settled
			sc.phases[i].settle = 0
		}
		vs = append(vs, againstFixed(t, sc, []setup{fcfsGradient, fcfsAIMD}, []int{6, 8, 12, 24, 32, 48})...)
	}
	report(t, "FCFS, capacity 16 → 4 → 32 servers, arrivals at 90 % of each, from 3 s after each step", vs,
		map[string]time.Duration{"gradient": 3 * fcfsService, "aimd": 7 * fcfsService / 2})
}

// A cold start under overload: 3× the capacity of 8 servers, and 1.5× that
// of 16.
func TestScenarioFCFSColdStart(t *testing.T) {
	skipSlow(t)
	var vs []verdict
	for _, seed := range fcfsSeeds {
		for _, c := range []struct{ servers, load float64 }{{8, 3}, {16, 1.5}} {
			sc := fcfsScenario(fmt.Sprintf("%.0f servers at %.1f×", c.servers, c.load), c.servers, c.load*c.servers/fcfsService.Seconds(), callsWait, 7*time.Second, seed)
			sc.phases = []phase{{sc.name + ", 3-7 s", 3 * time.Second, 7 * time.Second, 0}}
			vs = append(vs, againstFixed(t, sc, []setup{fcfsGradient, fcfsAIMD}, []int{6, 8, 10, 16, 20, 24})...)
		}
	}
	report(t, "FCFS, a cold start at 64 under overload, from 3 s on", vs, nil)
}

// Callers cancel at their deadline, and the backend serves the abandoned
// calls anyway: the running count falls, but the backend's line does not.
func TestScenarioFCFSAbandonedCalls(t *testing.T) {
	skipSlow(t)
	var vs []verdict
	for _, seed := range fcfsSeeds {
		sc := fcfsScenario("abandoned", 8, 2*8/fcfsService.Seconds(), callsAbandon, 7*time.Second, seed)
		sc.phases = []phase{{"2× the capacity of 8 servers, 3-7 s", 3 * time.Second, 7 * time.Second, 0}}
		vs = append(vs, againstFixed(t, sc, []setup{fcfsGradient, fcfsAIMD}, []int{6, 8, 10, 12})...)
	}
	report(t, "FCFS, callers that cancel at their deadline, the backend serving their calls", vs, nil)
}
