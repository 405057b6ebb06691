package adapt_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// feeder gives an AdaptiveLimit samples one window at a time, on a clock
// of its own.
type feeder struct {
	l  interface{ Limit() int }
	o  groupconc.AdaptiveLimit
	at time.Time
}

func feed(l interface {
	groupconc.AdaptiveLimit
	Limit() int
}) *feeder {
	return &feeder{l: l, o: l, at: time.Unix(1000, 0)}
}

// window gives one window (100ms, 25 samples) of tasks that ran for run at
// running tasks, then one sample that closes it, and returns the limit
// after it.
func (f *feeder) window(run time.Duration, running int) int {
	return f.windowOf(groupconc.StatusSuccess, nil, run, running)
}

// windowOf is window for tasks that ended with st and err.
func (f *feeder) windowOf(st groupconc.TaskStatus, err error, run time.Duration, running int) int {
	for range 25 {
		f.sample(st, err, run, running)
		f.at = f.at.Add(4 * time.Millisecond)
	}
	return f.sample(st, err, run, running)
}

func (f *feeder) sample(st groupconc.TaskStatus, err error, run time.Duration, running int) int {
	return f.o.Observe(groupconc.LimitSample{GroupKey: "g", Status: st, Err: err, RunTime: run, Running: running, Limit: f.l.Limit(), End: f.at})
}

// ps is the run time of a task of 10ms of work at n tasks on c cores,
// shared.
func ps(n, c int) time.Duration {
	return 10 * time.Millisecond * time.Duration(max(n, c)) / time.Duration(c)
}

func TestGradientStartsAtItsMaximumAndKeepsItUnderLightLoad(t *testing.T) {
	f := feed(adapt.NewGradient(2, 32, adapt.GradientConfig{}))
	assert.Equal(t, 32, f.l.Limit())
	for range 20 {
		assert.Equal(t, 32, f.window(ps(5, 8), 5), "running well below the limit: the run time is the baseline")
	}
	assert.Equal(t, 32, f.window(ps(40, 8), 10), "slow, but the limit does not bind: no cut")
}

func TestGradientFindsTheCapacityOnAColdStartUnderOverload(t *testing.T) {
	f := feed(adapt.NewGradient(1, 64, adapt.GradientConfig{}))
	// Each window runs full at the limit, on 16 cores.
	var limits []int
	for range 20 {
		n := f.l.Limit()
		limits = append(limits, f.window(ps(n, 16), n))
	}
	assert.Equal(t, []int{32, 16, 8}, limits[:3], "halved while the run times fell")
	assert.InDelta(t, 16, limits[3], 1, "then back to the capacity it measured")
	for i, n := range limits[8:] {
		assert.True(t, n >= 16 && n <= 18, "then at the capacity, 16, to within Tolerance: window %d at %d (%v)", 8+i, n, limits)
	}
}

// run gives windows of tasks filling the limit on cores, and returns the
// limits after each.
func (f *feeder) run(windows, cores int) []int {
	var limits []int
	for range windows {
		n := f.l.Limit()
		limits = append(limits, f.window(ps(n, cores), n))
	}
	return limits
}

func TestGradientFallsToTheCapacityItMeasuresAndRisesWhileBusy(t *testing.T) {
	f := feed(adapt.NewGradient(1, 64, adapt.GradientConfig{}))
	for range 5 {
		f.window(ps(20, 32), 20) // the baseline, 10ms; the limit does not bind
	}
	require.Equal(t, 64, f.l.Limit())
	// 32 → 8 cores: the limit binds, the run time is 8 times the baseline.
	low := f.run(20, 8)
	assert.Equal(t, []int{32, 16, 8}, low[:3], "at most halved per window, then the capacity it measures, 8, and 5 %, rounded")
	for i, n := range low[3:] {
		assert.True(t, n >= 8 && n <= 9, "then 8 or 9: window %d at %d (%v)", 3+i, n, low)
	}
	// 8 → 32 cores: up by a tenth, at least one, per window.
	f.window(ps(9, 32), 9)
	f.window(ps(9, 32), 9)
	high := f.run(12, 32)
	for i := 1; i < len(high); i++ {
		assert.Equal(t, high[i-1]+max(1, int(float64(high[i-1])/10+0.5)), high[i], "window %d (%v)", i, high)
	}
	at := f.l.Limit()
	assert.Equal(t, at, f.window(ps(at/2-1, 32), at/2-1), "no growth while running below half the limit")
}

func TestGradientTakesANewBaselineAfterSittingAtItsMinimum(t *testing.T) {
	f := feed(adapt.NewGradient(2, 16, adapt.GradientConfig{}))
	for range 5 {
		f.window(10*time.Millisecond, 16)
	}
	// The work got three times slower, whatever the concurrency.
	var limits []int
	for range 12 {
		limits = append(limits, f.window(30*time.Millisecond, f.l.Limit()))
	}
	assert.Equal(t, []int{8, 4, 2, 2, 2, 2, 2, 2, 3, 4, 5, 6}, limits, "five windows at the minimum, then the run time is the baseline")
}

func TestGradientSkipsIgnoredAndStaleSamplesAndCountsTimeouts(t *testing.T) {
	g := adapt.NewGradient(1, 16, adapt.GradientConfig{})
	f := feed(g)
	f.window(10*time.Millisecond, 4) // light load: the baseline
	for range 3 {
		f.window(10*time.Millisecond, 16)
	}
	require.Equal(t, 16, g.Limit())
	// Tasks cancelled by their caller, or failed, say nothing, however
	// fast or slow.
	for range 50 {
		f.sample(groupconc.StatusCancelled, context.Canceled, time.Second, 16)
		f.sample(groupconc.StatusFailed, errBoom, time.Microsecond, 16)
		f.at = f.at.Add(10 * time.Millisecond)
	}
	assert.Equal(t, 16, f.window(10*time.Millisecond, 16))
	// Timeouts: their run times count, as lower bounds.
	for range 26 {
		g.Observe(groupconc.LimitSample{GroupKey: "g", Status: groupconc.StatusCancelled, Err: context.DeadlineExceeded, RunTime: 40 * time.Millisecond, Running: 16, Limit: 16, End: f.at})
		f.at = f.at.Add(4 * time.Millisecond)
	}
	assert.Equal(t, 8, g.Limit(), "four times slower: halved")
	// Samples of tasks that started under the limit before it fell.
	for range 30 {
		g.Observe(groupconc.LimitSample{GroupKey: "g", Status: groupconc.StatusSuccess, RunTime: time.Second, Running: 16, Limit: 16, End: f.at})
		f.at = f.at.Add(4 * time.Millisecond)
	}
	assert.Equal(t, 8, f.window(10*time.Millisecond, 8), "what they show was acted on, but the timeout that closed the window is in the next: no growth")
	assert.Equal(t, 9, f.window(10*time.Millisecond, 8), "then growth")
}

func TestGradientWaitsForAFullWindow(t *testing.T) {
	f := feed(adapt.NewGradient(1, 16, adapt.GradientConfig{Window: time.Second, MinSamples: 100}))
	for range 10 {
		f.window(10*time.Millisecond, 4)
	}
	for range 10 {
		f.window(50*time.Millisecond, 16) // 26 samples per 100ms
	}
	assert.Equal(t, 8, f.l.Limit(), "one decision per second")
}

func TestGradientIsSafeForConcurrentUse(t *testing.T) {
	g := adapt.NewGradient(1, 64, adapt.GradientConfig{MinSamples: 5, Window: time.Millisecond})
	var wg sync.WaitGroup
	start := time.Unix(0, 0)
	for w := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				n := g.Observe(groupconc.LimitSample{Status: groupconc.StatusSuccess, RunTime: time.Duration(1+i%7) * time.Millisecond, Running: 1 + w, Limit: g.Limit(), End: start.Add(time.Duration(i) * 100 * time.Microsecond)})
				if n < 1 || n > 64 {
					t.Errorf("limit %d out of [1, 64]", n)
					return
				}
			}
		})
	}
	wg.Wait()
}

// The baseline taken under light load counts from then, as one taken on a
// cold start does. The load rises right after it was taken, and run times
// triple at 30 running of 40: the limit falls after Patience windows,
// also when the slow level has been seen as often as the baseline's.
func TestGradientKeepsALightLoadBaselineWhenTheLoadRisesAtOnce(t *testing.T) {
	g := adapt.NewGradient(1, 40, adapt.GradientConfig{})
	at := time.Unix(1000, 0)
	window := func(run time.Duration, running int) int { // 20 samples over 100ms
		for range 20 {
			at = at.Add(5 * time.Millisecond)
			g.Observe(groupconc.LimitSample{GroupKey: "g", Status: groupconc.StatusSuccess, RunTime: run, Running: running, Limit: g.Limit(), End: at})
		}
		at = at.Add(time.Millisecond)
		return g.Limit()
	}
	for range 2 {
		window(10*time.Millisecond, 10)
	}
	var limits []int
	for range 8 {
		limits = append(limits, window(30*time.Millisecond, 30))
	}
	assert.Less(t, slices.Min(limits), 30, "limits %v: run times 3× the baseline at 30 running", limits)
}
