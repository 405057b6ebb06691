package adapt

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A field that is zero, or out of its range, takes its documented default.
// One in range is kept, at either end of it.
func TestConfigsTakeTheirDefaults(t *testing.T) {
	gradient := GradientConfig{
		Window: 100 * time.Millisecond, MinSamples: 20, Percentile: 0.5, Tolerance: 0.1,
		Utilisation: 0.75, MaxDecrease: 0.5, Smoothing: 0.25, BaselineAge: 100,
		Reprobe: 5, Patience: 3, HeldPatience: 10, Resolution: 100 * time.Microsecond,
	}
	assert.Equal(t, gradient, GradientConfig{}.withDefaults())
	assert.Equal(t, gradient, GradientConfig{
		Window: -1, MinSamples: -1, Percentile: 1, Tolerance: math.Inf(1),
		Utilisation: 1.01, MaxDecrease: -0.5, Smoothing: 2, BaselineAge: -1,
		Reprobe: -1, Patience: -1, HeldPatience: -1, Resolution: -1,
	}.withDefaults())
	assert.Equal(t, 0.1, GradientConfig{Tolerance: math.NaN()}.withDefaults().Tolerance)
	own := GradientConfig{
		Window: 1, MinSamples: 1, Percentile: 0.01, Tolerance: 5,
		Utilisation: 1, MaxDecrease: 1, Smoothing: 1, BaselineAge: 1,
		Reprobe: 1, Patience: 1, HeldPatience: 1, Resolution: 1,
	}
	assert.Equal(t, own, own.withDefaults())

	aimd := AIMDConfig{Backoff: 0.9, Increase: 1, Utilisation: 0.5, Window: 100 * time.Millisecond}
	assert.Equal(t, aimd, AIMDConfig{}.withDefaults())
	assert.Equal(t, aimd, AIMDConfig{Backoff: 1, Increase: math.Inf(1), Utilisation: 1.01, Window: -1}.withDefaults())
	assert.Equal(t, 1.0, AIMDConfig{Increase: -1}.withDefaults().Increase)
	assert.Equal(t, 1.0, AIMDConfig{Increase: math.NaN()}.withDefaults().Increase)
	mine := AIMDConfig{Backoff: 0.01, Increase: 0.5, Utilisation: 1, Window: 1, Timeout: time.Second}
	assert.Equal(t, mine, mine.withDefaults())
}
