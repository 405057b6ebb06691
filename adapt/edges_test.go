package adapt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Reprobe slow windows in a row at the minimum make the latest run time
// the baseline, and the count starts from zero then. So the next new
// baseline comes Reprobe windows later, not one more. The work gets 100
// times slower after the first: its level's average catches up slowly,
// and each window stays slow until the second.
func TestAGradientTakesANewBaselineEveryReprobeWindowsAtItsMinimum(t *testing.T) {
	g := atMinimum()
	var limits []int
	for _, run := range []time.Duration{30, 30, 30, 30, 30, 3000, 3000, 3000, 3000, 3000, 3000} {
		fill(g, 20, run*time.Millisecond, 2, 2, Measure)
		limits = append(limits, decide(g))
	}
	assert.Equal(t, []int{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3}, limits, "new baselines after windows 5 and 10, then a busy window as fast rises")
}

// A window at the minimum that neither cuts nor raises the limit starts
// the count of windows there from zero. Then Reprobe slow windows after
// it, not fewer or more, make the latest run time the baseline. The
// window runs close to the baseline but too few tasks to rise, or
// between the baseline's rise and slow margins.
func TestAGradientCountsItsWindowsAtTheMinimumFromZeroAfterOneThatHolds(t *testing.T) {
	for name, hold := range map[string]struct {
		run     time.Duration // in µs
		running int
	}{
		"too few running":       {10000, 1},
		"neither fast nor slow": {10700, 2},
	} {
		g := atMinimum()
		var limits []int
		window := func(run time.Duration, running int) {
			fill(g, 20, run, running, 2, Measure)
			limits = append(limits, decide(g))
		}
		for range 4 {
			window(30*time.Millisecond, 2)
		}
		window(hold.run*time.Microsecond, hold.running)
		for range 6 {
			window(30*time.Millisecond, 2)
		}
		assert.Equal(t, []int{2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3}, limits, "%s: a new baseline after window 10, then a busy window as fast rises", name)
	}
}

// vote puts n samples of group key in g's window and tally, as record
// does: tasks that ran for run at a full limit of 16.
func vote(g *Gradient, key string, n int, run time.Duration) {
	for range n {
		g.w.add(0, run, 16, 16, Measure, false)
		g.tally.add(key, run, Measure)
	}
}

// Under AdaptiveGlobal a group is slow if its mean run time exceeds its
// baseline by 2 × Tolerance. Between Tolerance and twice it, x is not
// slow: y's slowness is its own, and the cap holds. Past twice it, both
// are slow, and the cap falls.
func TestAGlobalGradientTakesAGroupAsSlowOnlyPastTwiceTolerance(t *testing.T) {
	for _, c := range []struct {
		x    time.Duration // in µs
		want int
	}{
		{11500, 16}, // 1.14 × x's baseline, 10ms risen by baseDrift
		{12600, 8},  // 1.25 ×
	} {
		g := NewGradient(1, 16, GradientConfig{})
		g.probe.done = true
		g.levels.seed(16, float64(10*time.Millisecond))
		vote(g, "x", 10, 10*time.Millisecond)
		vote(g, "y", 10, 10*time.Millisecond)
		require.Equal(t, 16, decide(g), "both at their baselines")
		vote(g, "x", 10, c.x*time.Microsecond)
		vote(g, "y", 10, 40*time.Millisecond)
		assert.Equal(t, c.want, decide(g), "x at %v, y at 4 × its baseline", c.x*time.Microsecond)
	}
}

// A cut lowers the limit by at least one, however small MaxDecrease is.
// Here 1 % of 16 would round the floor up to 16 itself.
func TestAGradientsCutTakesAtLeastOne(t *testing.T) {
	g := NewGradient(1, 16, GradientConfig{MaxDecrease: 0.01})
	g.probe.done = true
	g.levels.seed(4, float64(10*time.Millisecond))
	fill(g, 20, 40*time.Millisecond, 16, 16, Measure)
	assert.Equal(t, 15, decide(g), "four times slower at a full limit")
}

// Once the run times stop falling, the probe goes to the concurrency the
// backend served at once, its best running count per run time times the
// baseline, and Tolerance/2 above it, as a rise may go. 128 ran in 40ms
// and 64 in 20ms: 3.2 a millisecond. 32 ran in 19ms, not faster by
// Tolerance. The baseline is 19.5ms, their mean, and 3.2 × 19.5 × 1.05
// is 65.52.
func TestAProbeGoesHalfToleranceAboveTheConcurrencyServedAtOnce(t *testing.T) {
	g := NewGradient(1, 128, GradientConfig{})
	fill(g, 20, 40*time.Millisecond, 128, 128, Measure)
	require.Equal(t, 64, decide(g))
	fill(g, 20, 20*time.Millisecond, 64, 64, Measure)
	require.Equal(t, 32, decide(g))
	fill(g, 20, 19*time.Millisecond, 32, 32, Measure)
	assert.Equal(t, 65, decide(g), "not 64, the limit before the last halving")
	assert.True(t, g.probe.done)
	assert.Equal(t, float64(19500*time.Microsecond), g.levels.baseline(100))
}
