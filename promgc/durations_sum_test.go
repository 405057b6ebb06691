package promgc_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/promgc"
)

// A histogram's sum only grows. It was kept in nanoseconds in a uint64 and
// read as a time.Duration, so it went negative past 2⁶³ ns, and back to 0
// past 2⁶⁴: 292 years of run time, about 11 days for a service running
// 10 000 tasks at once. Three runs of 292 years each stand for that here.
func TestHistogramSumsKeepGrowingPastTheRangeOfADuration(t *testing.T) {
	m, err := promgc.New(promgc.Options{})
	require.NoError(t, err)
	l := m.Listener()
	e := newExecutor(t, groupconc.NewPolicyBuilder())
	c := m.Collector(e)
	start := time.Unix(0, 0)
	r := groupconc.GroupResult[any]{GroupKey: "a", TaskID: "t", Status: groupconc.StatusSuccess,
		Submitted: start, Start: start, End: start.Add(math.MaxInt64)}
	longest := time.Duration(math.MaxInt64).Seconds()
	prev := 0.0
	for i := range 3 {
		l.OnCompleted("a", "t", r)
		sum := histogram(t, c, "groupconc_task_run_seconds").GetSampleSum()
		assert.InEpsilon(t, float64(i+1)*longest, sum, 1e-9, "the run sum after %d runs", i+1)
		assert.GreaterOrEqual(t, sum, prev, "the run sum after %d runs", i+1)
		prev = sum
	}
}
