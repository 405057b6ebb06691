package adapt_test

import (
	"math"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
	"github.com/stretchr/testify/assert"
)

// An AIMD whose maximum is within a few hundred of math.MaxInt (a group
// resolving Unlimited-1) wants a limit within its bounds. float64 rounds
// such a maximum up to 2^63, and int() of that is math.MinInt64 on amd64:
// the first sample wanted it, and the executor's clamp put the group at
// its minimum.
func TestAnAIMDNearMaxIntStaysWithinItsBounds(t *testing.T) {
	for _, hi := range []int{math.MaxInt - 1, math.MaxInt - 600} {
		a := adapt.NewAIMD(1, hi, adapt.AIMDConfig{})
		at := time.Unix(1000, 0)
		healthy := groupconc.LimitSample{Status: groupconc.StatusSuccess, RunTime: time.Millisecond, Running: 3, Limit: hi, End: at}
		assert.Equal(t, hi, a.Observe(healthy), "a healthy sample at %d", hi)
		assert.Equal(t, hi, a.Limit())
		failed := groupconc.LimitSample{Status: groupconc.StatusFailed, Err: errBoom, RunTime: time.Millisecond, Running: hi, Limit: hi, End: at}
		n := a.Observe(failed)
		assert.True(t, n >= 1 && n < hi && n > hi/10*8, "a failure cuts %d by a tenth: %d", hi, n)
	}
}

// Run times below Resolution (100µs), zero or negative, as a clock that
// does not move or steps back gives them, all count as 100µs: they move
// no limit, nor set a baseline that a real run time then looks slow
// against. docs/adaptive.md: "Tasks under 100 µs tell it nothing."
func TestGradientTakesRunTimesUnder100MicrosecondsAsThat(t *testing.T) {
	g := adapt.NewGradient(1, 16, adapt.GradientConfig{})
	f := feed(g)
	for range 4 {
		f.window(0, 4) // light load, and a clock that does not move
	}
	var limits []int
	for _, run := range []time.Duration{-time.Second, math.MinInt64, 10 * time.Microsecond, 99 * time.Microsecond, 100 * time.Microsecond} {
		for range 3 {
			limits = append(limits, f.window(run, 16))
		}
	}
	assert.Equal(t, []int{16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16}, limits, "all of them 100µs: the baseline")
	// Twice that, at a full limit, is slow.
	assert.Less(t, f.window(200*time.Microsecond, 16), 16)

	a := adapt.NewAIMD(1, 16, adapt.AIMDConfig{Timeout: time.Millisecond})
	for _, run := range []time.Duration{-time.Second, math.MinInt64, 0} {
		assert.Equal(t, 16, a.Observe(groupconc.LimitSample{Status: groupconc.StatusSuccess, RunTime: run, Running: 16, Limit: 16}), "%v is no timeout", run)
	}
}
