package adapt_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
	"github.com/stretchr/testify/assert"
)

// A minimum below one is one, and a maximum below the minimum is the
// minimum: a limit of zero would run nothing.
func TestLimitsStayWithinTheirBounds(t *testing.T) {
	a := adapt.NewAIMD(0, 4, adapt.AIMDConfig{})
	for range 50 {
		assert.GreaterOrEqual(t, a.Observe(groupconc.LimitSample{Status: groupconc.StatusFailed, Err: errBoom, Running: a.Limit(), Limit: a.Limit()}), 1)
	}
	assert.Equal(t, 1, a.Limit(), "as low as it goes")

	a = adapt.NewAIMD(5, 2, adapt.AIMDConfig{})
	assert.Equal(t, 5, a.Limit(), "starts at its maximum, the minimum")
	for range 50 {
		a.Observe(groupconc.LimitSample{Status: groupconc.StatusFailed, Err: errBoom, Running: 5, Limit: 5})
	}
	assert.Equal(t, 5, a.Limit(), "never below its minimum")

	g := adapt.NewGradient(0, 4, adapt.GradientConfig{})
	f := feed(g)
	var limits []int
	for range 10 {
		limits = append(limits, f.windowOf(groupconc.StatusCancelled, context.DeadlineExceeded, 10*time.Millisecond, g.Limit()))
	}
	assert.Equal(t, 1, slices.Min(limits), "deadlines pass at every limit: %v", limits)
}

// A fraction of one is out of range where the field is in (0, 1), and in
// it where it is in (0, 1]. A fraction above one is always out of range.
func TestAFractionOfOneIsItsDefaultUnlessAllowed(t *testing.T) {
	failed := groupconc.LimitSample{Status: groupconc.StatusFailed, Err: errBoom, Running: 10, Limit: 10}
	a := adapt.NewAIMD(1, 10, adapt.AIMDConfig{Backoff: 1})
	assert.Equal(t, 9, a.Observe(failed), "a Backoff of 1 means 0.9")

	// An AIMD at 9, of 10, takes healthy samples at 8 running.
	grows := func(c adapt.AIMDConfig, running int) bool {
		a := adapt.NewAIMD(1, 10, c)
		a.Observe(failed)
		for range 20 {
			a.Observe(groupconc.LimitSample{Status: groupconc.StatusSuccess, Running: running, Limit: 9})
		}
		return a.Limit() > 9
	}
	assert.False(t, grows(adapt.AIMDConfig{Utilisation: 1}, 8), "a Utilisation of 1: no growth below a full limit")
	assert.True(t, grows(adapt.AIMDConfig{Utilisation: 1}, 9), "a Utilisation of 1: growth at a full limit")
	assert.True(t, grows(adapt.AIMDConfig{Utilisation: 2}, 5), "a Utilisation of 2 means 0.5")
}

var errBusy = errors.New("busy")

// busyOverloads says that a failure with errBusy is a sign of overload, and
// ignores other failures.
func busyOverloads(s groupconc.LimitSample) adapt.Signal {
	if errors.Is(s.Err, errBusy) {
		return adapt.Overload
	}
	return adapt.DefaultClassify(s)
}

func TestAClassifyOfItsOwnSaysWhatASampleMeans(t *testing.T) {
	a := adapt.NewAIMD(1, 10, adapt.AIMDConfig{Classify: busyOverloads})
	assert.Equal(t, 10, a.Observe(groupconc.LimitSample{Status: groupconc.StatusFailed, Err: errBoom, Running: 10, Limit: 10}), "a failure it ignores")
	assert.Equal(t, 9, a.Observe(groupconc.LimitSample{Status: groupconc.StatusFailed, Err: errBusy, Running: 10, Limit: 10}), "a failure it calls overload")

	g := adapt.NewGradient(1, 16, adapt.GradientConfig{Classify: busyOverloads})
	f := feed(g)
	assert.Equal(t, 16, f.windowOf(groupconc.StatusFailed, errBoom, 10*time.Millisecond, 16), "failures it ignores")
	assert.Equal(t, 8, f.windowOf(groupconc.StatusFailed, errBusy, 10*time.Millisecond, 16), "failures it calls overload, at a full limit: halved")
}
