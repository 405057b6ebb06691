package adapt_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
	"github.com/stretchr/testify/assert"
)

// mixed gives l one window (100ms, 26 samples) of tasks of each of keys
// in turn, each ending with st after run[key], started with running tasks
// and waiting ones, and returns the limit after it. at is the clock.
type mixed struct {
	l  interface{ Limit() int }
	o  groupconc.AdaptiveLimit
	at time.Time
}

func newMixed(l interface {
	groupconc.AdaptiveLimit
	Limit() int
}) *mixed {
	return &mixed{l: l, o: l, at: time.Unix(1000, 0)}
}

func (m *mixed) window(run map[string]time.Duration, running, waiting int, st groupconc.TaskStatus, err error) int {
	var keys []string
	for _, k := range []string{"x", "y"} {
		if _, ok := run[k]; ok {
			keys = append(keys, k)
		}
	}
	limit := 0
	for i := range 26 {
		k := keys[i%len(keys)]
		s := st
		if st == groupconc.StatusSuccess {
			err = nil
		}
		limit = m.o.Observe(groupconc.LimitSample{GroupKey: k, Status: s, Err: err, RunTime: run[k], Running: running, Limit: m.l.Limit(), Waiting: waiting, End: m.at})
		m.at = m.at.Add(4 * time.Millisecond)
	}
	return limit
}

func ok(run map[string]time.Duration, running int, m *mixed) int {
	return m.window(run, running, 0, groupconc.StatusSuccess, nil)
}

var ms10 = 10 * time.Millisecond

func TestGradientLowersALimitTheLoadDoesNotFillOnceItsRunTimesStaySlow(t *testing.T) {
	m := newMixed(adapt.NewGradient(1, 64, adapt.GradientConfig{}))
	for range 4 {
		ok(map[string]time.Duration{"x": ms10}, 10, m) // light load: the baseline
	}
	// The backend got slower at the same load: 20 run, well below 64.
	var limits []int
	for range 4 {
		limits = append(limits, ok(map[string]time.Duration{"x": 3 * ms10}, min(20, m.l.Limit()), m))
	}
	assert.Equal(t, []int{64, 64, 10, 5}, limits, "Patience windows, then towards 20 / 3, at most halving what runs a window")
}

func TestGradientWaitsLongerBeforeLoweringAHeldBackLimit(t *testing.T) {
	m := newMixed(adapt.NewGradient(1, 64, adapt.GradientConfig{}))
	for range 4 {
		ok(map[string]time.Duration{"x": ms10}, 10, m)
	}
	// Tasks of the group wait while it runs 20 of 64: held back.
	var limits []int
	for range 10 {
		limits = append(limits, m.window(map[string]time.Duration{"x": 3 * ms10}, 20, 5, groupconc.StatusSuccess, nil))
	}
	assert.Equal(t, []int{64, 64, 64, 64, 64, 64, 64, 64, 64, 10}, limits, "HeldPatience windows first")
}

func TestGradientCutsOnDeadlinesWhateverTheRunningCount(t *testing.T) {
	m := newMixed(adapt.NewGradient(1, 64, adapt.GradientConfig{}))
	for range 4 {
		ok(map[string]time.Duration{"x": ms10}, 10, m)
	}
	// Their callers gave up after 10ms, but the backend still serves
	// their calls: 20 run, well below 64.
	first := m.window(map[string]time.Duration{"x": ms10}, 20, 0, groupconc.StatusCancelled, context.DeadlineExceeded)
	assert.LessOrEqual(t, first, 20, "below what runs, at once, whatever the run times")
	second := m.window(map[string]time.Duration{"x": ms10}, first, 0, groupconc.StatusCancelled, context.DeadlineExceeded)
	assert.Less(t, second, first, "and again while deadlines pass")
	assert.LessOrEqual(t, ok(map[string]time.Duration{"x": ms10}, second, m), second, "a window with a timeout in it does not rise")
}

func TestAGlobalGradientFallsOnlyOnOverloadTheGroupsShare(t *testing.T) {
	m := newMixed(adapt.NewGradient(1, 64, adapt.GradientConfig{}))
	both := func(x, y time.Duration) map[string]time.Duration { return map[string]time.Duration{"x": x, "y": y} }
	for range 4 {
		ok(both(ms10, ms10), 60, m) // both groups' baselines, at a busy cap
	}
	assert.Equal(t, 64, m.l.Limit())
	for range 5 {
		assert.Equal(t, 64, ok(both(8*ms10, ms10), 64, m), "x's backend slowed, y's did not: x's own limit acts")
	}
	assert.Less(t, ok(both(8*ms10, 8*ms10), 64, m), 64, "both slowed: a shared slowdown lowers the cap")
}

func TestAGlobalAIMDFallsOnlyOnOverloadTheGroupsShare(t *testing.T) {
	m := newMixed(adapt.NewAIMD(1, 64, adapt.AIMDConfig{Timeout: 2 * ms10}))
	both := func(x, y time.Duration) map[string]time.Duration { return map[string]time.Duration{"x": x, "y": y} }
	ok(both(ms10, ms10), 64, m)
	ok(both(3*ms10, ms10), 64, m) // the first window of x's timeouts: not yet told apart
	at := m.l.Limit()
	for range 5 {
		assert.Equal(t, at, ok(both(3*ms10, ms10), 64, m), "x's timeouts alone: x's own limit acts")
	}
	ok(both(3*ms10, 3*ms10), 64, m)
	assert.Less(t, ok(both(3*ms10, 3*ms10), 64, m), at, "timeouts in both groups lower the cap")
}

// limiter is an algorithm whose limit a test reads.
type limiter interface {
	groupconc.AdaptiveLimit
	Limit() int
}

// lightAndBusy feeds l windows of 100ms: each of ten light tenants gives
// 4 samples, too few to vote alone, and a busy tenant gives 10, each
// running out its deadline. The light tenants end with light's status. It
// returns the least global limit l wanted.
func lightAndBusy(l limiter, windows int, light groupconc.TaskStatus) int {
	at, least := time.Unix(1000, 0), l.Limit()
	observe := func(s groupconc.LimitSample) {
		s.End, s.Limit, s.Running = at, l.Limit(), l.Limit()/3
		if s.Status == groupconc.StatusCancelled {
			s.Err = context.DeadlineExceeded
		}
		least = min(least, l.Observe(s))
		at = at.Add(2 * time.Millisecond)
	}
	for range windows {
		for i := range 10 {
			for h := range 10 {
				if i < 4 {
					observe(groupconc.LimitSample{GroupKey: string(rune('a' + h)), Status: light, RunTime: ms10})
				}
			}
			observe(groupconc.LimitSample{GroupKey: "busy", Status: groupconc.StatusCancelled, RunTime: 5 * ms10})
		}
	}
	return least
}

func TestManyLightTenantsOutvoteOneBusyTenantInTrouble(t *testing.T) {
	for name, l := range map[string]func() limiter{
		"gradient": func() limiter { return adapt.NewGradient(1, 64, adapt.GradientConfig{}) },
		"aimd":     func() limiter { return adapt.NewAIMD(1, 64, adapt.AIMDConfig{}) },
	} {
		assert.Equal(t, 64, lightAndBusy(l(), 30, groupconc.StatusSuccess), "%s: one busy tenant's deadlines, ten light tenants well: the cap holds", name)
		assert.Less(t, lightAndBusy(l(), 30, groupconc.StatusCancelled), 64, "%s: the light tenants' deadlines pass too: the cap falls", name)
	}
}

// longAndBusy feeds l windows of 100ms: a tenant of long calls (400ms)
// ends 2 each window, too few to vote in one, and a busy tenant 10. The
// busy tenant's run out their deadline from window warm on. It returns
// the least global limit l wanted from then.
func longAndBusy(l limiter, warm, windows int) int {
	at, least := time.Unix(1000, 0), math.MaxInt
	var w int
	observe := func(s groupconc.LimitSample) {
		s.End, s.Limit, s.Running = at, l.Limit(), l.Limit()
		if limit := l.Observe(s); w >= warm {
			least = min(least, limit)
		}
		at = at.Add(100 * time.Millisecond / 12)
	}
	for w = range windows {
		for i := range 12 {
			switch {
			case i >= 10:
				observe(groupconc.LimitSample{GroupKey: "long", Status: groupconc.StatusSuccess, RunTime: 40 * ms10})
			case w < warm:
				observe(groupconc.LimitSample{GroupKey: "busy", Status: groupconc.StatusSuccess, RunTime: ms10})
			default:
				observe(groupconc.LimitSample{GroupKey: "busy", Status: groupconc.StatusCancelled, Err: context.DeadlineExceeded, RunTime: 5 * ms10})
			}
		}
	}
	return least
}

// A tenant of long calls ends a few in a window: it votes over as many
// windows as its vote takes, and its vote stands. So one busy tenant's
// deadlines do not lower the cap while the tenant of long calls runs well.
func TestATenantOfLongCallsVotesToo(t *testing.T) {
	for name, l := range map[string]func() limiter{
		"gradient": func() limiter { return adapt.NewGradient(1, 64, adapt.GradientConfig{}) },
		"aimd":     func() limiter { return adapt.NewAIMD(1, 64, adapt.AIMDConfig{}) },
	} {
		assert.Equal(t, 64, longAndBusy(l(), 10, 40), "%s: the cap fell for one tenant's deadlines", name)
	}
}

// Under AdaptiveGlobal a group is slow above (1+2×Tolerance) × its own
// baseline.
func TestAGlobalGradientTakesAGroupAsSlowPastTwiceTolerance(t *testing.T) {
	m := newMixed(adapt.NewGradient(1, 64, adapt.GradientConfig{}))
	both := func(x, y time.Duration) map[string]time.Duration { return map[string]time.Duration{"x": x, "y": y} }
	for range 4 {
		ok(both(ms10, ms10), 60, m)
	}
	assert.Less(t, ok(both(13*time.Millisecond, 13*time.Millisecond), 64, m), 64, "both 1.3 × their baselines: shared")
}

// A tenant of long calls has voted and runs on, ending a call every 150 ms.
// Another joins with calls that fail at once. In the windows where the long
// tenant ends none, its vote still stands: the newcomer's failures are its
// own, and the cap does not fall.
func TestANewTenantsFailuresLeaveTheCapWhileALongTenantsVoteStands(t *testing.T) {
	for name, l := range map[string]func() limiter{
		"gradient": func() limiter { return adapt.NewGradient(1, 64, adapt.GradientConfig{}) },
		"aimd":     func() limiter { return adapt.NewAIMD(1, 64, adapt.AIMDConfig{}) },
	} {
		a := l()
		start := time.Unix(1e9, 0)
		limit, least := 64, 64
		for ms := 1; ms <= 3000; ms++ {
			now := start.Add(time.Duration(ms) * time.Millisecond)
			if ms%150 == 0 {
				limit = a.Observe(groupconc.LimitSample{GroupKey: "long", Status: groupconc.StatusSuccess, RunTime: time.Second, Running: limit, Limit: limit, End: now})
			}
			if ms >= 1000 {
				limit = a.Observe(groupconc.LimitSample{GroupKey: "failing", Status: groupconc.StatusFailed, Err: errors.New("503"), RunTime: time.Millisecond, Running: limit, Limit: limit, End: now})
			}
			least = min(least, limit)
		}
		assert.Equal(t, 64, least, "%s: the cap fell for the new tenant's failures", name)
	}
}
