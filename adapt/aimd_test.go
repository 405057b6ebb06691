package adapt_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
	"github.com/stretchr/testify/assert"
)

var errBoom = errors.New("boom")

func TestAIMDAddsOnePerLimitOfBusyHealthySamples(t *testing.T) {
	a := adapt.NewAIMD(1, 20, adapt.AIMDConfig{})
	f := feed(a)
	for range 3 {
		f.sample(groupconc.StatusFailed, errBoom, time.Millisecond, 20)
	}
	assert.Equal(t, 14, a.Limit(), "20 × 0.9³")
	for range 15 {
		f.sample(groupconc.StatusSuccess, nil, time.Millisecond, 14)
	}
	assert.Equal(t, 15, a.Limit(), "14.58 + about 15/15")
	for range 16 {
		f.sample(groupconc.StatusSuccess, nil, time.Millisecond, 15)
	}
	assert.Equal(t, 16, a.Limit())
	for range 100 {
		f.sample(groupconc.StatusSuccess, nil, time.Millisecond, 7)
	}
	assert.Equal(t, 16, a.Limit(), "no growth while running below half the limit")
	for range 1000 {
		f.sample(groupconc.StatusSuccess, nil, time.Millisecond, 20)
	}
	assert.Equal(t, 20, a.Limit(), "never above its maximum")
}

func TestAIMDCutsOnSignsOfOverloadOncePerLimit(t *testing.T) {
	a := adapt.NewAIMD(2, 10, adapt.AIMDConfig{Timeout: 50 * time.Millisecond, Backoff: 0.5})
	o := func(st groupconc.TaskStatus, err error, run time.Duration, limit int) int {
		return a.Observe(groupconc.LimitSample{Status: st, Err: err, RunTime: run, Running: limit, Limit: limit})
	}
	assert.Equal(t, 10, o(groupconc.StatusCancelled, context.Canceled, time.Second, 10), "a cancel by the caller says nothing")
	assert.Equal(t, 5, o(groupconc.StatusSuccess, nil, 60*time.Millisecond, 10), "slower than Timeout")
	assert.Equal(t, 5, o(groupconc.StatusCancelled, context.DeadlineExceeded, time.Second, 10), "started under the limit before: acted on already")
	assert.Equal(t, 2, o(groupconc.StatusCancelled, context.DeadlineExceeded, time.Second, 5), "a timeout")
	assert.Equal(t, 2, o(groupconc.StatusFailed, errBoom, time.Millisecond, 2), "never below its minimum")

	ignoreFailures := adapt.NewAIMD(1, 10, adapt.AIMDConfig{Classify: adapt.DefaultClassify})
	assert.Equal(t, 10, ignoreFailures.Observe(groupconc.LimitSample{Status: groupconc.StatusFailed, Err: errBoom, Running: 10, Limit: 10}))
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		status        groupconc.TaskStatus
		err           error
		def, failures adapt.Signal
	}{
		{groupconc.StatusSuccess, nil, adapt.Measure, adapt.Measure},
		{groupconc.StatusFailed, errBoom, adapt.Ignore, adapt.Overload},
		{groupconc.StatusCancelled, context.DeadlineExceeded, adapt.Overload, adapt.Overload},
		{groupconc.StatusCancelled, context.Canceled, adapt.Ignore, adapt.Ignore},
	} {
		s := groupconc.LimitSample{Status: c.status, Err: c.err}
		assert.Equal(t, c.def, adapt.DefaultClassify(s), "%v %v", c.status, c.err)
		assert.Equal(t, c.failures, adapt.FailuresOverload(s), "%v %v", c.status, c.err)
	}
	assert.Equal(t, "ignore measure overload Signal(7)", adapt.Ignore.String()+" "+adapt.Measure.String()+" "+adapt.Overload.String()+" "+adapt.Signal(7).String())
}

func TestAIMDTakesARunTimeOfTimeoutAsHealthy(t *testing.T) {
	a := adapt.NewAIMD(1, 10, adapt.AIMDConfig{Timeout: 50 * time.Millisecond})
	o := func(run time.Duration) int {
		return a.Observe(groupconc.LimitSample{Status: groupconc.StatusSuccess, RunTime: run, Running: 10, Limit: 10})
	}
	assert.Equal(t, 10, o(50*time.Millisecond), "not above Timeout")
	assert.Equal(t, 9, o(50*time.Millisecond+1), "above it")

	a = adapt.NewAIMD(1, 10, adapt.AIMDConfig{Timeout: time.Nanosecond})
	assert.Equal(t, 9, o(2), "any Timeout above zero counts")
}

// A global AIMD counts the samples by group over Window. A sample that
// ends Window after the first is judged with the groups' votes of it.
func TestAGlobalAIMDJudgesOverloadOnceWindowHasPassed(t *testing.T) {
	a := adapt.NewAIMD(1, 10, adapt.AIMDConfig{Window: 100 * time.Millisecond})
	at := time.Unix(1000, 0)
	timeout := func(key string, limit int) int {
		return a.Observe(groupconc.LimitSample{GroupKey: key, Status: groupconc.StatusCancelled, Err: context.DeadlineExceeded, RunTime: 10 * time.Millisecond, Running: limit, Limit: limit, End: at})
	}
	for range 5 {
		timeout("x", 10)
		timeout("y", 10)
	}
	assert.Equal(t, 9, a.Limit(), "cut once: the other samples started under the limit before")
	at = at.Add(100 * time.Millisecond)
	assert.Equal(t, 8, timeout("x", 9), "both voted slow: shared")
}
