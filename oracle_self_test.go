package groupconc_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// oracleFakeTB records failures instead of failing: the oracle's self-tests
// feed it broken histories and expect the checks to complain.
type oracleFakeTB struct {
	testing.TB // nil: only Helper and Errorf are used by the checks
	errs       []string
}

func (f *oracleFakeTB) Helper() {}

func (f *oracleFakeTB) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

// TestOracleFlagsBrokenHistories shows each check fails on the breakage it
// is for, and passes on a good history (RELIABILITY: an oracle that never
// fails proves nothing).
func TestOracleFlagsBrokenHistories(t *testing.T) {
	S, St, C, R := oracleSubmitted, oracleStarted, oracleCompleted, oracleRejected
	lives := []struct {
		name string
		seq  []oracleEventKind
		ok   bool
	}{
		{"ran", []oracleEventKind{S, St, C}, true},
		{"cancelled while waiting", []oracleEventKind{S, C}, true},
		{"rejected", []oracleEventKind{S, R}, true},
		{"caller-runs", []oracleEventKind{S, R, St, C}, true},
		{"lost completion", []oracleEventKind{S, St}, false},
		{"double completion", []oracleEventKind{S, St, C, C}, false},
		{"started twice", []oracleEventKind{S, St, St, C}, false},
		{"started before submitted", []oracleEventKind{St, S, C}, false},
		{"rejected after running", []oracleEventKind{S, St, C, R}, false},
		{"never submitted", []oracleEventKind{St, C}, false},
		{"nothing", nil, false},
	}
	for _, l := range lives {
		o := newOracle()
		for _, k := range l.seq {
			status := groupconc.TaskStatus(0)
			if k == C {
				status = groupconc.StatusCancelled
				if slices.Contains(l.seq, St) {
					status = groupconc.StatusSuccess
				}
			}
			o.rec.event("g", "1", k, &groupconc.GroupResult[any]{GroupKey: "g", TaskID: "1", Status: status})
		}
		o.accepted.Store(1)
		o.finals[groupconc.StatusSuccess].Store(1)
		f := &oracleFakeTB{}
		got := o.checkEvents(f)
		assert.Equal(t, l.ok, got, "%s: %v", l.name, f.errs)
	}

	// Events after seal (after Shutdown returned).
	o := newOracle()
	o.rec.OnSubmitted("g", "1")
	o.seal()
	o.rec.OnCompleted("g", "1", groupconc.GroupResult[any]{GroupKey: "g", TaskID: "1", Status: groupconc.StatusCancelled})
	o.accepted.Store(1)
	f := &oracleFakeTB{}
	assert.False(t, o.checkEvents(f), "an event after seal must be flagged")

	// OnCompleted naming another task.
	o = newOracle()
	o.rec.OnSubmitted("g", "1")
	o.rec.OnCompleted("g", "1", groupconc.GroupResult[any]{GroupKey: "g", TaskID: "2", Status: groupconc.StatusCancelled})
	o.accepted.Store(1)
	f = &oracleFakeTB{}
	assert.False(t, o.checkEvents(f))

	// I1: a gauge over its cap.
	o = newOracle()
	g := o.gauges.group("a")
	g.inc()
	g.inc()
	g.dec()
	g.dec()
	f = &oracleFakeTB{}
	assert.False(t, o.checkLimits(f, oracleLimits{global: groupconc.Unlimited, group: func(string) int { return 1 }}))
	assert.True(t, o.checkLimits(f, oracleLimits{global: groupconc.Unlimited, group: func(string) int { return 2 }}))
	o.gauges.global.inc()
	o.gauges.global.inc()
	assert.False(t, o.checkLimits(f, oracleLimits{global: 1}))
}

// TestOracleFlagsBrokenResults shows the I3 checks fail on a handle without
// a result, on outcome counters that disagree, and on a function entered
// without an OnStarted.
func TestOracleFlagsBrokenResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newOracle()
		p, err := groupconc.NewPolicyBuilder().TaskLifecycleListener(o.rec).Build()
		require.NoError(t, err)
		e := groupconc.New(p)
		h, err := oracleSubmit(o, t.Context(), e, "a", "1", func(context.Context) (int, error) { return 1, nil })
		require.NoError(t, err)
		h.Wait()
		require.NoError(t, e.Shutdown(t.Context()))
		o.seal()
		require.True(t, o.checkAll(t, e, oracleLimitsOf(p)), "a good history passes")

		// A handle that never completes.
		never := make(chan struct{})
		o.mu.Lock()
		o.tracked = append(o.tracked, &oracleTracked{groupKey: "a", taskID: "ghost", done: never})
		o.mu.Unlock()
		o.accepted.Add(1)
		f := &oracleFakeTB{}
		assert.False(t, o.checkResults(f, e), "a handle without a result must be flagged")
		assert.False(t, o.checkEvents(f), "a task with no event must be flagged")

		// The function was entered without OnStarted.
		o2 := newOracle()
		fn := oracleTask(o2, "a", "a", "x", func(context.Context) (int, error) { return 0, nil })
		o2.rec.OnSubmitted("a", "x")
		_, _ = fn(t.Context())
		o2.rec.OnCompleted("a", "x", groupconc.GroupResult[any]{GroupKey: "a", TaskID: "x", Status: groupconc.StatusCancelled})
		o2.accepted.Store(1)
		f = &oracleFakeTB{}
		assert.False(t, o2.checkEvents(f), "fn entered but never heard starting must be flagged: %v", f.errs)
	})
}

// TestOracleLiveAllowsOnlyTheDrainOfALoweredLimit shows the live-limits
// check lets the functions started under a higher limit run on after it is
// lowered, flags a start above the lowered limit once they have ended, and
// is as strict as a fixed limit while the limit does not change.
func TestOracleLiveAllowsOnlyTheDrainOfALoweredLimit(t *testing.T) {
	policy := func(conc, global int) *groupconc.GroupPolicy {
		return mustBuild(t, builder().DefaultMaxConcurrencyPerGroup(conc).GlobalMaxInFlight(global))
	}
	start := func(l *oracleLive, n int) []func() {
		exits := make([]func(), n)
		for i := range exits {
			exits[i] = l.enter("a")
		}
		return exits
	}

	l := newOracleLive(policy(2, groupconc.Unlimited))
	start(l, 3)
	f := &oracleFakeTB{}
	assert.False(t, l.check(f), "3 running under concurrency 2 must be flagged")

	l = newOracleLive(policy(3, groupconc.Unlimited))
	exits := start(l, 3)
	l.update(policy(1, groupconc.Unlimited))
	exits[0]()
	exits = append(exits[1:], l.enter("a")) // 3 again, the first of the 3 still running
	f = &oracleFakeTB{}
	assert.True(t, l.check(f), "while the lowered limit drains, the old one holds: %v", f.errs)
	for _, exit := range exits {
		exit()
	}
	start(l, 2)
	f = &oracleFakeTB{}
	assert.False(t, l.check(f), "2 running under concurrency 1, with nothing left from before it was lowered, must be flagged")
	assert.Equal(t, 1, l.allowed("a"))

	l = newOracleLive(policy(groupconc.Unlimited, 2))
	start(l, 2)
	l.update(policy(groupconc.Unlimited, 1))
	assert.Equal(t, 2, l.allowed(oracleGlobalScope))
	l.enter("b")
	f = &oracleFakeTB{}
	assert.False(t, l.check(f), "3 running over all groups under a global cap lowered from 2 must be flagged")

	queue := func(q int) *groupconc.GroupPolicy { return mustBuild(t, builder().DefaultQueueThresholdPerGroup(q)) }
	threshold := func(p *groupconc.GroupPolicy) int { return p.ResolveQueueThreshold("a") }
	l = newOracleLive(queue(3))
	l.update(queue(1))
	assert.Equal(t, 3, l.waitBound("a", 3, threshold), "tasks waiting when the threshold was lowered may stay")
	assert.Equal(t, 1, l.waitBound("a", 0, threshold))
	assert.Equal(t, 1, l.waitBound("a", 2, threshold), "once none waited, the lowered threshold holds")
}
