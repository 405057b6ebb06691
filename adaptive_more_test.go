package groupconc_test

// Adaptive limits, continued: the global cap, policy updates, the change
// function, panics and the settings Build refuses.

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAnAdaptiveGlobalCapMovesUnderFairShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(script)
		var changes []groupconc.LimitChange
		e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().
			Isolation(groupconc.IsolationFairShare).DefaultMaxConcurrencyPerGroup(4).GlobalMaxInFlight(4).
			AdaptiveGlobal(groupconc.AdaptiveConfig{New: s.new}).
			LimitChanges(func(c groupconc.LimitChange) { changes = append(changes, c) })))
		defer e.Close()
		gates := make([]chan struct{}, 6)
		var running gauge
		var hs []*groupconc.TaskHandle[int]
		for i := range gates {
			gates[i] = make(chan struct{})
			hs = append(hs, submit(t, t.Context(), e, []string{"a", "b"}[i%2], "t", gated(gates[i], i, &running)))
		}
		synctest.Wait()
		s.want.Store(2)
		close(gates[0])
		synctest.Wait()
		assert.Equal(t, 2, e.Stats().GlobalMaxInFlight, "the cap in force")
		assert.Equal(t, 4, e.Policy().GlobalMaxInFlight(), "the policy's")
		assert.Equal(t, int64(3), running.cur.Load(), "a lowered cap interrupts nothing")
		close(gates[1])
		synctest.Wait()
		assert.Equal(t, int64(2), running.cur.Load())
		s.want.Store(4)
		close(gates[2])
		synctest.Wait()
		// Its own permit, given back under the cap of 2 with 2 running,
		// went to one waiter; the raise started the other at once.
		assert.Equal(t, int64(3), running.cur.Load(), "the raised cap started both waiters at once")
		assert.Zero(t, e.Stats().Waiting)
		for _, g := range gates[3:] {
			close(g)
		}
		for _, h := range hs {
			h.Wait()
		}
		got := s.taken()
		require.Len(t, got, 6)
		assert.Equal(t, "a", got[0].GroupKey, "the task's group")
		for i, ls := range got {
			// The running count at a task's start depends on how far
			// the others got; it counts every group's tasks, never past
			// the cap.
			assert.Equal(t, 4, ls.Limit, "sample %d: the global cap at its start", i)
			assert.True(t, ls.Running >= 1 && ls.Running <= 4, "sample %d: %d running at its start", i, ls.Running)
		}
		require.Len(t, changes, 2)
		assert.Equal(t, groupconc.LimitChange{Old: 4, New: 2, At: changes[0].At}, changes[0], "the global cap's change has no group key")
		assert.Equal(t, 1, s.bounds[0])
		assert.Equal(t, 4, s.bounds[1])
	})
}

func TestUpdatePolicyStartsAdaptiveLimitsAfresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(script)
		b := adaptiveGroups(s, 5, 1, 0)
		e := groupconc.New(mustBuild(t, b))
		defer e.Close()
		s.want.Store(2)
		submit(t, t.Context(), e, "g", "t", func(context.Context) (int, error) { return 0, nil }).Wait()
		require.Equal(t, 2, groupStats(t, e, "g").MaxConcurrency)
		require.Equal(t, int64(1), s.made.Load())
		s.want.Store(0)
		require.NoError(t, e.UpdatePolicy(mustBuild(t, b)))
		assert.Equal(t, 5, groupStats(t, e, "g").MaxConcurrency, "back at the resolved limit")
		assert.Equal(t, int64(2), s.made.Load(), "a new algorithm for the group")
		require.NoError(t, e.UpdatePolicy(mustBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(3))))
		submit(t, t.Context(), e, "g", "t", func(context.Context) (int, error) { return 0, nil }).Wait()
		assert.Len(t, s.taken(), 1, "a policy without adaptive limits samples nothing")
	})
}

// UpdatePolicy starts an adaptive global cap afresh too, with a new
// algorithm at the policy's cap, and a policy without one samples nothing.
func TestUpdatePolicyStartsTheAdaptiveGlobalCapAfresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(script)
		b := groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).GlobalMaxInFlight(4).
			AdaptiveGlobal(groupconc.AdaptiveConfig{New: s.new})
		e := newExecutor(t, b)
		s.want.Store(2)
		submit(t, t.Context(), e, "g", "t", succeed).Wait()
		require.Equal(t, 2, e.Stats().GlobalMaxInFlight)
		s.want.Store(0)
		require.NoError(t, e.UpdatePolicy(mustBuild(t, b)))
		assert.Equal(t, 4, e.Stats().GlobalMaxInFlight, "back at the policy's cap")
		assert.Equal(t, int64(2), s.made.Load(), "a new algorithm for the cap")
		require.NoError(t, e.UpdatePolicy(mustBuild(t, builder().Isolation(groupconc.IsolationFairShare).GlobalMaxInFlight(3))))
		sampled := len(s.taken())
		submit(t, t.Context(), e, "g", "t", succeed).Wait()
		assert.Len(t, s.taken(), sampled, "a policy without an adaptive cap samples nothing")
		assert.Equal(t, 3, e.Stats().GlobalMaxInFlight)
	})
}

func TestLimitChangesAreToldWithNoLockHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(script)
		s.want.Store(2)
		var e *groupconc.GroupExecutor
		var told atomic.Int64
		e = groupconc.New(mustBuild(t, adaptiveGroups(s, 4, 1, 0).LimitChanges(func(c groupconc.LimitChange) {
			told.Add(1)
			// Each of these takes a lock that the change took.
			st, _ := e.GroupStats(c.GroupKey)
			assert.Equal(t, c.New, st.MaxConcurrency, "told once in force")
			assert.NoError(t, e.UpdatePolicy(e.Policy()))
			panic("a panic in the function is ignored")
		})))
		defer e.Close()
		submit(t, t.Context(), e, "g", "t", func(context.Context) (int, error) { return 0, nil }).Wait()
		assert.Equal(t, int64(1), told.Load())
		assert.Equal(t, 4, groupStats(t, e, "g").MaxConcurrency, "the UpdatePolicy in the function started it afresh")
	})
}

// A panic in LimitChanges, told of a group's change, leaves the same
// sample to move the global cap too.
func TestAPanicInLimitChangesLeavesTheSampleToTheGlobalCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		group, global := new(script), new(script)
		group.want.Store(2)
		global.want.Store(3)
		var told []string
		e := groupconc.New(mustBuild(t, adaptiveGroups(group, 4, 1, 0).
			Isolation(groupconc.IsolationFairShare).GlobalMaxInFlight(5).
			AdaptiveGlobal(groupconc.AdaptiveConfig{New: global.new}).
			LimitChanges(func(c groupconc.LimitChange) {
				told = append(told, c.GroupKey)
				panic("ignored")
			})))
		defer e.Close()
		r := submit(t, t.Context(), e, "g", "t", func(context.Context) (int, error) { return 0, nil }).Wait()
		assert.Equal(t, groupconc.StatusSuccess, r.Status)
		assert.Equal(t, 2, groupStats(t, e, "g").MaxConcurrency, "the group's limit")
		assert.Equal(t, 3, e.Stats().GlobalMaxInFlight, "the global cap, moved by the same sample")
		assert.Equal(t, []string{"g", ""}, told)
	})
}

func TestAPanicInAnAdaptiveLimitLeavesTheLimitAsItIs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		made := 0
		e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(3).
			AdaptiveConcurrency(groupconc.AdaptiveConfig{New: func(key string, _, _ int) groupconc.AdaptiveLimit {
				made++
				switch key {
				case "new panics":
					panic("boom")
				case "new returns nil":
					return nil
				}
				return panicky{}
			}})))
		defer e.Close()
		for _, key := range []string{"new panics", "new returns nil", "observe panics"} {
			for range 3 {
				h := submit(t, t.Context(), e, key, "t", func(context.Context) (int, error) { return 1, nil })
				assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, key)
			}
			assert.Equal(t, 3, groupStats(t, e, key).MaxConcurrency, key)
		}
		assert.Equal(t, 3, made)
	})
}

type panicky struct{}

func (panicky) Observe(groupconc.LimitSample) int { panic("boom") }

func TestAGroupResolvingUnlimitedIsNotAdaptive(t *testing.T) {
	s := new(script)
	e := groupconc.New(mustBuild(t, adaptiveGroups(s, groupconc.Unlimited, 1, 1)))
	defer e.Close()
	submit(t, t.Context(), e, "g", "t", func(context.Context) (int, error) { return 0, nil }).Wait()
	assert.Zero(t, s.made.Load())
	assert.Empty(t, s.taken())
	st := groupStats(t, e, "g")
	assert.Equal(t, groupconc.Unlimited, st.MaxConcurrency)
	assert.Equal(t, groupconc.Unlimited, st.QueueThreshold)
}

func TestBuildRejectsBadAdaptiveSettings(t *testing.T) {
	ok := func(string, int, int) groupconc.AdaptiveLimit { return new(script) }
	fair := func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
		return b.Isolation(groupconc.IsolationFairShare).GlobalMaxInFlight(8)
	}
	for _, c := range []struct {
		name string
		b    *groupconc.PolicyBuilder
		want string
	}{
		{"no New", groupconc.NewPolicyBuilder().AdaptiveConcurrency(groupconc.AdaptiveConfig{}), "AdaptiveConcurrency.New is nil"},
		{"a negative Min", groupconc.NewPolicyBuilder().AdaptiveConcurrency(groupconc.AdaptiveConfig{New: ok, Min: -1}), "AdaptiveConcurrency.Min is -1, want >= 0"},
		{"a negative QueueFactor", groupconc.NewPolicyBuilder().AdaptiveConcurrency(groupconc.AdaptiveConfig{New: ok, QueueFactor: -1}), "AdaptiveConcurrency.QueueFactor is -1, want a finite number >= 0"},
		{"a NaN QueueFactor", groupconc.NewPolicyBuilder().AdaptiveConcurrency(groupconc.AdaptiveConfig{New: ok, QueueFactor: math.NaN()}), "AdaptiveConcurrency.QueueFactor is NaN"},
		{"an infinite QueueFactor", groupconc.NewPolicyBuilder().AdaptiveConcurrency(groupconc.AdaptiveConfig{New: ok, QueueFactor: math.Inf(1)}), "AdaptiveConcurrency.QueueFactor is +Inf"},
		{"a global cap with no New", fair(groupconc.NewPolicyBuilder()).AdaptiveGlobal(groupconc.AdaptiveConfig{}), "AdaptiveGlobal.New is nil"},
		{"a global cap with a QueueFactor", fair(groupconc.NewPolicyBuilder()).AdaptiveGlobal(groupconc.AdaptiveConfig{New: ok, QueueFactor: 2}), "AdaptiveGlobal.QueueFactor is 2, want 0"},
		{"a global cap under IsolationOff", groupconc.NewPolicyBuilder().GlobalMaxInFlight(8).AdaptiveGlobal(groupconc.AdaptiveConfig{New: ok}), "AdaptiveGlobal needs Isolation(IsolationFairShare), have off"},
		{"an unlimited global cap", groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).AdaptiveGlobal(groupconc.AdaptiveConfig{New: ok}), "AdaptiveGlobal needs a GlobalMaxInFlight to start from, have Unlimited"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := c.b.Build()
			assert.Nil(t, p)
			require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	_, err := fair(groupconc.NewPolicyBuilder()).AdaptiveGlobal(groupconc.AdaptiveConfig{New: ok}).
		AdaptiveConcurrency(groupconc.AdaptiveConfig{New: ok, Min: 2, QueueFactor: 0.5}).Build()
	assert.NoError(t, err)
}

// An adaptive limit that never moves costs no allocation per task: the
// sample lives on the stack of the task's goroutine. Each task is let
// finish (synctest.Wait) before its Wait, so no run makes a done channel
// and the count does not depend on how the scheduler interleaves.
func TestAdaptiveLimitsAddNoAllocationPerTask(t *testing.T) {
	allocs := func(b *groupconc.PolicyBuilder) (n float64) {
		synctest.Test(t, func(t *testing.T) {
			e := groupconc.New(mustBuild(t, b))
			defer e.Close()
			ctx := context.Background()
			done := func(context.Context) (int, error) { return 0, nil }
			n = leastAllocs(1000, func() {
				h, err := groupconc.Submit(ctx, e, "g", "t", done)
				if err != nil {
					panic(err)
				}
				synctest.Wait()
				h.Wait()
			})
		})
		return n
	}
	off := allocs(groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(4))
	on := allocs(adaptiveGroups(new(script), 4, 1, 1))
	assert.Equal(t, off, on, "allocations per task, adaptive off then on")
}

// A parent's own task is limited by the parent's limit, which its
// subtree's running tasks hold permits of too. So its sample's Running
// counts them: t's limit of 4 was full as its own task started, beside
// three of t/u's.
func TestAParentsOwnSampleCountsItsSubtreesRunningTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(script)
		e := newExecutor(t, adaptiveGroups(s, 8, 1, 0).ParentSeparator("/").
			PerGroupMaxConcurrency(map[string]int{"t": 4}))
		gate, own := make(chan struct{}), make(chan struct{})
		var running gauge
		var hs []*groupconc.TaskHandle[int]
		for i := range 3 {
			hs = append(hs, submit(t, t.Context(), e, "t/u", fmt.Sprint(i), gated(gate, i, &running)))
		}
		synctest.Wait()
		h := submit(t, t.Context(), e, "t", "own", gated(own, 3, &running))
		synctest.Wait()
		require.EqualValues(t, 4, running.cur.Load())
		close(own)
		h.Wait()
		ss := s.taken()
		require.Len(t, ss, 1)
		assert.Equal(t, "t", ss[0].GroupKey)
		assert.Equal(t, 4, ss[0].Limit)
		assert.Equal(t, 4, ss[0].Running, "t's limit was full as its own task started")
		close(gate)
		quiesce(t, e, hs...)
	})
}

// A task under an adaptive limit runs as any task does: the listener hears
// it start and complete, its times are exact, and a Cancel as it runs
// keeps the Start it began at.
func TestATaskUnderAnAdaptiveLimitIsToldAndTimedAsAnyTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		e := newExecutor(t, adaptiveGroups(new(script), 4, 1, 0).TaskLifecycleListener(rec))
		time.Sleep(time.Second) // the tasks' times are offsets from the executor's clock: not 0
		h := submit(t, t.Context(), e, "g", "run", func(context.Context) (int, error) {
			time.Sleep(time.Second)
			return 1, nil
		})
		r := h.Wait()
		assert.Equal(t, time.Second, r.Duration())
		assert.Equal(t, time.Second, r.End.Sub(r.Submitted))
		synctest.Wait()
		assert.Equal(t, []string{evSubmitted, evStarted, evCompleted}, rec.Events("g", "run"))
		told, ok := rec.Result("g", "run")
		require.True(t, ok, "OnCompleted")
		assert.Equal(t, r.End, told.End, "the listener's End")

		c := submit(t, t.Context(), e, "g", "cancelled", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		})
		time.Sleep(time.Second)
		require.True(t, c.Cancel())
		assert.Equal(t, time.Second, c.Wait().Duration(), "from the Start it began at")
	})
}
