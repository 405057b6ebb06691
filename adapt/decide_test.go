package adapt

import (
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fill puts n samples in g's window, of tasks that ran for run and started
// with running tasks under limit, and signalled sig.
func fill(g *Gradient, n int, run time.Duration, running, limit int, sig Signal) {
	for range n {
		g.w.add(0, run, running, limit, sig, false)
	}
}

// decide decides on g's window as its closing would, and returns the limit.
func decide(g *Gradient) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closeLocked()
	return g.Limit()
}

// A probe halves the limit while the run times fall, if at least half the
// window's tasks started at a full limit. Fewer than that found a backend
// less busy than the limit lets it be.
func TestAProbeJudgesByTheTasksStartedAtAFullLimitIfHalfOfThem(t *testing.T) {
	g := NewGradient(1, 16, GradientConfig{})
	fill(g, 10, 40*time.Millisecond, 16, 16, Measure)
	fill(g, 10, 10*time.Millisecond, 4, 16, Measure)
	assert.Equal(t, 8, decide(g), "half started full: halved")

	g = NewGradient(1, 16, GradientConfig{})
	fill(g, 9, 40*time.Millisecond, 16, 16, Measure)
	fill(g, 11, 10*time.Millisecond, 4, 16, Measure)
	assert.Equal(t, 16, decide(g), "fewer than half: light load")
	assert.False(t, g.probe.done)

	g = NewGradient(1, 16, GradientConfig{})
	fill(g, 1, 40*time.Millisecond, 16, 16, Measure)
	assert.Equal(t, 8, decide(g), "a window of one task, started full")
}

// A window closes at the first sample that ends once it is due. It may
// hold a single sample.
func TestAGradientClosesAWindowOfOneSample(t *testing.T) {
	g := NewGradient(1, 16, GradientConfig{MinSamples: 1, Window: time.Millisecond})
	at := time.Unix(1000, 0)
	var limits []int
	for range 3 {
		limits = append(limits, g.Observe(groupconc.LimitSample{Status: groupconc.StatusSuccess, RunTime: 40 * time.Millisecond, Running: g.Limit(), Limit: g.Limit(), End: at}))
		at = at.Add(time.Millisecond)
	}
	assert.Equal(t, []int{16, 8, 16}, limits, "halved, then as slow at 8: back")
}

// A sample is held back if tasks of its group waited while it ran below
// its limit, even one.
func TestAGradientTakesOneTaskWaitingAsHeldBack(t *testing.T) {
	g := NewGradient(1, 16, GradientConfig{})
	for _, s := range []groupconc.LimitSample{
		{Waiting: 1, Running: 8, Limit: 16},
		{Waiting: 1, Running: 16, Limit: 16},
		{Waiting: 0, Running: 8, Limit: 16},
	} {
		s.Status, s.RunTime = groupconc.StatusSuccess, time.Millisecond
		g.Observe(s)
	}
	assert.Equal(t, 1, g.w.held)
}

// noiseLocked is twice the standard error of the window's percentile, as a
// fraction of it, from the interquartile range.
func TestAWindowsNoiseIsTwiceItsStandardError(t *testing.T) {
	g := NewGradient(1, 16, GradientConfig{})
	for i := range 16 {
		g.w.add(0, time.Duration(16-i)*time.Millisecond, 1, 16, Measure, false)
	}
	// Quartiles 5ms and 13ms, from 16 samples, at 10ms.
	assert.InDelta(t, 2*1.25*8/1.35/10/4, g.noiseLocked(float64(10*time.Millisecond)), 1e-9)
}

// A window is overloaded if over one of its samples in ten ran out their
// deadline, whatever the running count: while the baseline is measured,
// and after.
func TestAWindowIsOverloadedPastOneDeadlineInTen(t *testing.T) {
	for _, c := range []struct{ n, over, want int }{{20, 2, 16}, {20, 3, 8}, {19, 2, 8}} {
		g := NewGradient(1, 16, GradientConfig{})
		fill(g, c.n-c.over, 10*time.Millisecond, 4, 16, Measure)
		fill(g, c.over, 10*time.Millisecond, 4, 16, Overload)
		assert.Equal(t, c.want, decide(g), "measuring the baseline: %d deadlines of %d", c.over, c.n)
	}
	for _, c := range []struct{ over, want int }{{2, 16}, {3, 4}} {
		g := NewGradient(1, 16, GradientConfig{})
		g.probe.done = true
		g.levels.seed(4, float64(10*time.Millisecond))
		fill(g, 20-c.over, 10*time.Millisecond, 4, 16, Measure)
		fill(g, c.over, 10*time.Millisecond, 4, 16, Overload)
		assert.Equal(t, c.want, decide(g), "with a baseline: %d deadlines of 20, at 4 running", c.over)
	}
}

// An overloaded window that does not fill the limit still measures the
// run time, by all its tasks. The probe stops once the run times no
// longer fall, and goes back to the limit before the last halving.
func TestAProbeMeasuresAnOverloadedWindowByAllItsTasks(t *testing.T) {
	g := NewGradient(1, 16, GradientConfig{})
	fill(g, 17, 40*time.Millisecond, 4, 16, Measure)
	fill(g, 3, 40*time.Millisecond, 4, 16, Overload)
	require.Equal(t, 8, decide(g))
	fill(g, 20, 40*time.Millisecond, 8, 8, Measure)
	assert.Equal(t, 16, decide(g), "as slow at 8 as at 16")
	assert.True(t, g.probe.done)
	assert.Equal(t, float64(40*time.Millisecond), g.levels.baseline(100))
}

// Under light load the baseline is the run time once the mean running
// count no longer climbs by over Tolerance of itself, plus one.
func TestAProbeUnderLightLoadSettlesOnceTheRunningCountStopsClimbing(t *testing.T) {
	g := NewGradient(1, 64, GradientConfig{Tolerance: 0.5})
	window := func(running ...int) {
		for _, n := range running {
			fill(g, 10, 10*time.Millisecond, n, 64, Measure)
		}
		require.Equal(t, 64, decide(g))
	}
	window(1)
	assert.False(t, g.probe.done, "the first window, even at one running")
	window(10)
	assert.False(t, g.probe.done, "10 > 1 × 1.5 + 1: climbing")
	window(17)
	assert.False(t, g.probe.done, "17 > 10 × 1.5 + 1: climbing")
	window(26, 27)
	assert.True(t, g.probe.done, "26.5 = 17 × 1.5 + 1: no longer climbing")
	assert.Equal(t, float64(10*time.Millisecond), g.levels.baseline(100))
}

// A window at a full limit starts the light load's count again: the
// running count of a later light window is the first of its climb.
func TestAProbeStartsItsClimbAgainAfterAFullWindow(t *testing.T) {
	g := NewGradient(1, 64, GradientConfig{})
	fill(g, 20, 10*time.Millisecond, 10, 64, Measure)
	require.Equal(t, 64, decide(g))
	fill(g, 20, 40*time.Millisecond, 64, 64, Measure)
	require.Equal(t, 32, decide(g))
	fill(g, 20, 10*time.Millisecond, 2, 32, Measure)
	assert.Equal(t, 32, decide(g))
	assert.False(t, g.probe.done, "the first window of a new climb")
}

// The probe halves the limit while the run times fall by over Tolerance
// of themselves, and stops at its minimum. Then it goes back to the limit
// before the last halving, the least the backend served at once.
func TestAProbeStopsAtItsMinimumOrOnceTheRunTimesFallByTolerance(t *testing.T) {
	g := NewGradient(8, 16, GradientConfig{})
	fill(g, 20, 80*time.Millisecond, 16, 16, Measure)
	require.Equal(t, 8, decide(g))
	fill(g, 20, 40*time.Millisecond, 8, 8, Measure)
	assert.Equal(t, 16, decide(g), "at the minimum, run times still falling")
	assert.True(t, g.probe.done)
	assert.Equal(t, float64(60*time.Millisecond), g.levels.baseline(100), "the mean of the last two windows")

	g = NewGradient(8, 8, GradientConfig{})
	fill(g, 20, 40*time.Millisecond, 8, 8, Measure)
	assert.Equal(t, 8, decide(g), "at the minimum from the start")
	assert.True(t, g.probe.done)
	assert.Equal(t, float64(40*time.Millisecond), g.levels.baseline(100))

	g = NewGradient(1, 16, GradientConfig{Tolerance: 0.5})
	fill(g, 20, 40*time.Millisecond, 16, 16, Measure)
	require.Equal(t, 8, decide(g))
	fill(g, 20, 20*time.Millisecond, 8, 8, Measure)
	assert.Equal(t, 16, decide(g), "run times fell by Tolerance, not more")
	assert.True(t, g.probe.done)
}

// settledAt returns a Gradient of [1, 16] whose baseline, measured at 4
// running, is 10ms.
func settledAt() *Gradient {
	g := NewGradient(1, 16, GradientConfig{Tolerance: 0.5})
	g.probe.done = true
	g.levels.seed(4, float64(10*time.Millisecond))
	return g
}

// A window is slow above (1+Tolerance) × the baseline, plus its noise,
// none here: at exactly that, the limit holds, however many windows.
func TestAGradientHoldsAtTheEdgeOfSlow(t *testing.T) {
	g := settledAt()
	for range 3 {
		fill(g, 20, 15*time.Millisecond, 16, 16, Measure)
		assert.Equal(t, 16, decide(g), "1.5 × the baseline")
	}
	fill(g, 20, 20*time.Millisecond, 16, 16, Measure)
	assert.Equal(t, 16, decide(g), "slower, but not beyond twice the margin: one window may be chance")
	fill(g, 20, 20*time.Millisecond, 16, 16, Measure)
	assert.Less(t, decide(g), 16, "two are not")
}

// Slow windows count in a row: a window close to the baseline between two
// slow ones starts the count again.
func TestAGradientCountsSlowWindowsInARow(t *testing.T) {
	g := settledAt()
	for _, run := range []time.Duration{16, 10, 16, 10, 16} {
		fill(g, 20, run*time.Millisecond, 16, 16, Measure)
		assert.Equal(t, 16, decide(g), "%dms", run)
	}
}

// A window is held back if over half its tasks started with tasks of their
// group waiting while it ran below its limit. Then neither a slow window
// nor deadlines that passed lower the limit at once.
func TestAGradientIsHeldBackByOverHalfItsTasks(t *testing.T) {
	for _, c := range []struct {
		held, over int
		run        time.Duration
		want       int
	}{
		{10, 0, 25, 8}, {11, 0, 25, 16}, // 2.5 × the baseline
		{10, 3, 10, 13}, {11, 3, 10, 16}, // 3 deadlines of 20
	} {
		g := settledAt()
		for i := range 20 {
			sig := Measure
			if i >= 20-c.over {
				sig = Overload
			}
			g.w.add(0, c.run*time.Millisecond, 16, 16, sig, i < c.held)
		}
		assert.Equal(t, c.want, decide(g), "%dms, %d deadlines, %d of 20 held back", c.run, c.over, c.held)
	}
}

// A limit binds if the mean running count is at least nine tenths of it.
// One that does not waits for Patience slow windows.
func TestAGradientBindsAtNineTenthsOfItsLimit(t *testing.T) {
	for _, c := range []struct{ at15, want int }{{8, 8}, {7, 16}} {
		g := settledAt()
		fill(g, 20-c.at15, 25*time.Millisecond, 14, 16, Measure)
		fill(g, c.at15, 25*time.Millisecond, 15, 16, Measure)
		n := g.w.meanRunning()
		assert.Equal(t, c.want, decide(g), "2.5 × the baseline, %v running of 16", n)
	}
}

// A limit rises below (1+Tolerance/2) × the baseline, if the mean running
// count is at least Utilisation × the limit.
func TestAGradientRisesCloseToTheBaselineAtABusyLimit(t *testing.T) {
	for _, c := range []struct {
		run           time.Duration // in µs
		running, want int
	}{{12500, 8, 8}, {12000, 8, 12}, {10000, 6, 12}, {10000, 5, 8}} {
		g := settledAt()
		g.limit.Store(8)
		fill(g, 20, c.run*time.Microsecond, c.running, 8, Measure)
		assert.Equal(t, c.want, decide(g), "%v at %d running of 8", c.run*time.Microsecond, c.running)
	}
}

// atMinimum returns a Gradient at its minimum, 2, whose baseline, measured
// at 8 running, is 10ms.
func atMinimum() *Gradient {
	g := NewGradient(2, 16, GradientConfig{})
	g.probe.done = true
	g.levels.seed(8, float64(10*time.Millisecond))
	g.limit.Store(2)
	return g
}

// Reprobe slow windows in a row at the minimum make the latest run time
// the baseline. The count starts again then, and after a window of
// deadlines, which is overload, not a slower backend, or one not slow.
func TestAGradientCountsItsWindowsAtTheMinimumAfresh(t *testing.T) {
	type step struct {
		run     time.Duration // in ms
		running int
		sig     Signal
	}
	slow, slower, light := step{30, 2, Measure}, step{90, 2, Measure}, step{10, 1, Measure}
	for name, steps := range map[string][]step{
		"after a new baseline":    {slow, slow, slow, slow, slow, slower, slower, slower, slower, slower},
		"the latest run time":     {slow, slow, slow, slow, slow, {55, 2, Measure}, {55, 2, Measure}},
		"after deadlines":         {slow, slow, slow, slow, {30, 2, Overload}, slow, slow, slow, slow, slow},
		"after a window not slow": {slow, slow, slow, slow, light, slow, slow, slow, slow, slow},
	} {
		g := atMinimum()
		var limits []int
		for _, s := range steps {
			fill(g, 20, s.run*time.Millisecond, s.running, 2, s.sig)
			limits = append(limits, decide(g))
		}
		for i, n := range limits {
			assert.Equal(t, 2, n, "%s: window %d (%v)", name, i, limits)
		}
	}
}

// A percentile below the least sample's share is the least sample.
func TestALowPercentileOfFewSamplesIsTheLeast(t *testing.T) {
	r := runs{d: []time.Duration{2, 1}}
	assert.Equal(t, time.Duration(1), r.percentile(0.25))
}
