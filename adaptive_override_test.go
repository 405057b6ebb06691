package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An override that pauses, resumes or sets a queue threshold leaves an
// adaptive limit where it moved to: an operator who pauses a group whose
// backend struggles does not resume it at full concurrency. One that
// changes MaxConcurrency starts it afresh there, as UpdatePolicy does.
func TestAnOverrideOfAnotherLimitLeavesAnAdaptiveLimitWhereItIs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(script)
		e := groupconc.New(mustBuild(t, adaptiveGroups(s, 8, 1, 2)))
		defer e.Close()
		done := func(context.Context) (int, error) { return 0, nil }
		fallTo(t, e, s, 3)

		yes, no, q, c := true, false, 5, 6
		for _, c := range []struct {
			o     groupconc.GroupOverride
			queue int // the threshold follows the limit, at most the override's
		}{{groupconc.GroupOverride{Paused: &yes}, 6}, {groupconc.GroupOverride{Paused: &no}, 6}, {groupconc.GroupOverride{QueueThreshold: &q}, 5}} {
			require.NoError(t, e.SetGroupOverride("g", c.o))
			st := groupStats(t, e, "g")
			assert.Equal(t, 3, st.MaxConcurrency, "after %+v", c.o)
			assert.Equal(t, c.queue, st.QueueThreshold, "after %+v: 2 × 3, at most the override's", c.o)
			assert.Equal(t, int64(1), s.made.Load(), "no new algorithm after %+v", c.o)
		}

		// The limit still moves, and the threshold follows it within the new bound.
		s.want.Store(2)
		submit(t, t.Context(), e, "g", "t", done).Wait()
		st := groupStats(t, e, "g")
		assert.Equal(t, 2, st.MaxConcurrency)
		assert.Equal(t, 4, st.QueueThreshold)
		s.want.Store(0)

		require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{MaxConcurrency: &c}))
		assert.Equal(t, 6, groupStats(t, e, "g").MaxConcurrency, "a new maximum starts afresh")
		assert.Equal(t, int64(2), s.made.Load())
	})
}

// A sample names its group's top-level ancestor, whose vote a global cap's
// algorithm counts it in.
func TestASampleNamesItsTopLevelGroup(t *testing.T) {
	s := new(script)
	e := groupconc.New(mustBuild(t, adaptiveGroups(s, 2, 1, 0).ParentSeparator("/")))
	defer e.Close()
	done := func(context.Context) (int, error) { return 0, nil }
	for _, key := range []string{"t/u1/d", "t", "solo"} {
		submit(t, t.Context(), e, key, key, done).Wait()
	}
	got := s.taken()
	require.Len(t, got, 3)
	for i, want := range [][2]string{{"t/u1/d", "t"}, {"t", "t"}, {"solo", "solo"}} {
		assert.Equal(t, want, [2]string{got[i].GroupKey, got[i].TopGroupKey})
	}
}

// A task that started before an override of its group's queue threshold
// still moves the adaptive limit as it ends: the override carries the
// group's adaptive state on, the one the task's sample goes to.
func TestASampleOfATaskRunningAcrossAQueueOverrideMovesTheLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(script)
		e := groupconc.New(mustBuild(t, adaptiveGroups(s, 8, 1, 2)))
		defer e.Close()
		s.want.Store(3)
		submit(t, t.Context(), e, "g", "t", func(context.Context) (int, error) { return 0, nil }).Wait()
		require.Equal(t, 3, groupStats(t, e, "g").MaxConcurrency)
		gate := make(chan struct{})
		h := submit(t, t.Context(), e, "g", "t", func(context.Context) (int, error) { <-gate; return 0, nil })
		synctest.Wait()
		q := 5
		require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{QueueThreshold: &q}))
		s.want.Store(2)
		close(gate)
		h.Wait()
		st := groupStats(t, e, "g")
		assert.Equal(t, 2, st.MaxConcurrency, "the running task's sample lowered the limit")
		assert.Equal(t, 4, st.QueueThreshold, "twice the limit, within the override's 5")
	})
}

// An override that sets MaxConcurrency starts an adaptive limit afresh,
// also at the value the policy resolves: the operator's 8 is applied, not
// the 3 the limit had fallen to. Dropping it starts the limit afresh too.
func TestAnOverrideOfMaxConcurrencyAtThePolicysValueRestartsAnAdaptiveLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(script)
		e := groupconc.New(mustBuild(t, adaptiveGroups(s, 8, 1, 0)))
		defer e.Close()
		fallTo(t, e, s, 3)
		c, yes := 8, true
		require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{MaxConcurrency: &c}))
		assert.Equal(t, 8, groupStats(t, e, "g").MaxConcurrency, "an override of MaxConcurrency 8 restarts the limit at 8")
		assert.Equal(t, int64(2), s.made.Load())

		fallTo(t, e, s, 3)
		require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{MaxConcurrency: &c, Paused: &yes}))
		assert.Equal(t, 3, groupStats(t, e, "g").MaxConcurrency, "a pause that keeps the override's 8 leaves the limit")
		require.NoError(t, e.SetGroupOverride("g", groupconc.GroupOverride{}))
		assert.Equal(t, 8, groupStats(t, e, "g").MaxConcurrency, "a dropped MaxConcurrency restarts the limit")
		assert.Equal(t, int64(3), s.made.Load())
	})
}

// fallTo has s move group g's adaptive limit to n with one task, and then
// keep each limit it sees.
func fallTo(t *testing.T, e *groupconc.GroupExecutor, s *script, n int64) {
	t.Helper()
	s.want.Store(n)
	submit(t, t.Context(), e, "g", "t", func(context.Context) (int, error) { return 0, nil }).Wait()
	require.Equal(t, int(n), groupStats(t, e, "g").MaxConcurrency)
	s.want.Store(0)
}
