package adapt_test

import (
	"testing"
	"time"

	"github.com/kobe/groupconc/adapt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A limit at its minimum whose busy windows run a little over the
// baseline, too slow to rise and not slow enough to fall, takes their run
// time as the baseline after Reprobe windows, as it does after Reprobe
// slow ones, and rises again. The baseline is the least of several
// averages, each of a few windows, so it runs low by chance; and it may
// date from before the backend slowed. Without this the limit sat at its
// minimum for BaselineAge windows (100: 40 s at 20 samples of 20 ms) after
// the backend recovered, shedding the group's load.
func TestGradientAtItsMinimumRisesOnceItsBaselineProvesLow(t *testing.T) {
	f := feed(adapt.NewGradient(1, 16, adapt.GradientConfig{}))
	for range 4 {
		f.window(10*time.Millisecond, 3) // light load: the baseline, 10ms at 3
	}
	// The backend gets three times slower: the limit binds and falls.
	for range 8 {
		if f.l.Limit() == 1 {
			break
		}
		f.window(30*time.Millisecond, f.l.Limit())
	}
	require.Equal(t, 1, f.l.Limit())
	// It recovers. At the minimum the group's tasks run 8 % over the
	// baseline: within its noise, but not within the 5 % it rises at.
	var limits []int
	for range 8 {
		limits = append(limits, f.window(10800*time.Microsecond, f.l.Limit()))
	}
	assert.Equal(t, []int{1, 1, 1, 1, 1, 2, 3, 4}, limits, "Reprobe windows at the minimum, then the run time is the baseline")
}

// Two tenants share a backend of 32 servers first come, first served,
// each at 35 % of it, with callers that give up at their deadline. It
// degrades to 4 servers at 4 s and recovers at 9 s. Each tenant's
// adaptive limit must let it back to the goodput it had before: from
// 12 s on, at least 0.9 of its goodput from 2 s to 4 s. Seed 3 left
// Gradient's limit of tenant X at its minimum until 14 s, at 88/s of the
// 522/s it had (see TestGradientAtItsMinimumRisesOnceItsBaselineProvesLow).
func TestScenarioFCFSTenantsRecoverWithTheirSharedBackend(t *testing.T) {
	sc := twoTenants(32, 0.35*32/fcfsService.Seconds(), true, 3)
	sc.calls = callsAbort
	sc.duration = 16 * time.Second
	sc.steps = []step{{0, 32, 0}, {4 * time.Second, 4, 0}, {9 * time.Second, 32, 0}}
	before := phase{"before", 2 * time.Second, 4 * time.Second, 0}
	after := phase{"recovered", 12 * time.Second, 16 * time.Second, 0}
	for _, al := range tenantAlgos {
		o := simulate(t, sc, tenants(al.name, 32, 64, al.new, nil))
		was, now := measure(o, before, 2), measure(o, after, 2)
		_, limits := meanLimits(o, after)
		for g, name := range []string{"X", "Y"} {
			if now.perGroup[g] < 0.9*was.perGroup[g] {
				t.Errorf("%s: tenant %s's goodput %.0f/s once the backend recovered, want >= 0.9 × its %.0f/s before (mean limit %.1f)",
					al.name, name, now.perGroup[g], was.perGroup[g], limits[g])
			}
		}
	}
}
