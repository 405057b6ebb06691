package adapt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A load just over the capacity builds a queue in the backend slowly. The
// limit does not fill at first, and the run times climb with the running
// count. The probe settles once the count stops climbing. Its baseline is
// the least run time of that climb, not the last. The last includes a
// queue of three times the work. Taking it, the limit held at its
// maximum, and nearly no task met its deadline. See
// TestScenarioFCFSColdStartJustOverCapacity.
func TestAProbeUnderAClimbingLoadTakesTheLeastRunTimeAsTheBaseline(t *testing.T) {
	g := NewGradient(1, 64, GradientConfig{})
	for _, w := range []struct {
		running int
		run     time.Duration
	}{{15, 24}, {26, 35}, {30, 45}, {42, 62}, {48, 72}, {60, 84}, {59, 87}} {
		fill(g, 20, w.run*time.Millisecond, w.running, 64, Measure)
		require.Equal(t, 64, decide(g), "a light window at %d running", w.running)
	}
	require.True(t, g.probe.done, "59 running after 60: no longer climbing")
	assert.Equal(t, float64(24*time.Millisecond), g.levels.baseline(100))
	// The queue goes on growing once the limit fills.
	for range 2 {
		fill(g, 20, 90*time.Millisecond, 64, 64, Measure)
		decide(g)
	}
	assert.Less(t, g.Limit(), 64, "four times the baseline, at a full limit")
}
