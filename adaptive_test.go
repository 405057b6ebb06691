package groupconc_test

// Adaptive limits: the hook that feeds each finished task's sample to an
// AdaptiveLimit and applies what it returns (README "Adaptive limits";
// the algorithms and the simulation are package adapt's).

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// script is an AdaptiveLimit that keeps every sample and wants the limit
// in want (0: the limit the sample started under).
type script struct {
	want    atomic.Int64
	made    atomic.Int64 // limits made by New
	mu      sync.Mutex
	samples []groupconc.LimitSample // guarded by mu
	bounds  [2]int                  // guarded by mu: New's min and max
}

func (s *script) new(_ string, lo, hi int) groupconc.AdaptiveLimit {
	s.made.Add(1)
	s.mu.Lock()
	s.bounds = [2]int{lo, hi}
	s.mu.Unlock()
	return s
}

func (s *script) Observe(ls groupconc.LimitSample) int {
	s.mu.Lock()
	s.samples = append(s.samples, ls)
	s.mu.Unlock()
	if n := s.want.Load(); n != 0 {
		return int(n)
	}
	return ls.Limit
}

func (s *script) taken() []groupconc.LimitSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]groupconc.LimitSample(nil), s.samples...)
}

// adaptiveGroups returns a builder whose groups resolve limit and adapt
// through s, with min and queue factor qf.
func adaptiveGroups(s *script, limit, min int, qf float64) *groupconc.PolicyBuilder {
	return groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(limit).
		AdaptiveConcurrency(groupconc.AdaptiveConfig{New: s.new, Min: min, QueueFactor: qf})
}

func TestAnAdaptiveLimitLoweredDrainsAndRaisedStartsWaitersAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(script)
		var changes []groupconc.LimitChange
		e := groupconc.New(mustBuild(t, adaptiveGroups(s, 4, 1, 0).
			LimitChanges(func(c groupconc.LimitChange) { changes = append(changes, c) })))
		defer e.Close()
		gates := make([]chan struct{}, 6)
		var running gauge
		var hs []*groupconc.TaskHandle[int]
		for i := range gates {
			gates[i] = make(chan struct{})
			hs = append(hs, submit(t, t.Context(), e, "g", "t", gated(gates[i], i, &running)))
		}
		synctest.Wait()
		require.Equal(t, int64(4), running.cur.Load())

		s.want.Store(1)
		close(gates[0])
		synctest.Wait()
		st := groupStats(t, e, "g")
		assert.Equal(t, 1, st.MaxConcurrency, "the limit in force")
		assert.Equal(t, 3, st.Running, "a lowered limit interrupts nothing")
		assert.Equal(t, 2, st.Waiting)
		for _, h := range hs[1:4] {
			assert.False(t, h.IsDone())
		}

		close(gates[1])
		synctest.Wait()
		assert.Equal(t, int64(2), running.cur.Load(), "no task starts while the group runs at or over its limit")

		s.want.Store(4)
		// Its own permit, given back under the limit of 1 with 2 running,
		// would go to nobody: the raise starts both waiters.
		close(gates[2])
		synctest.Wait()
		assert.Equal(t, int64(3), running.cur.Load(), "the raised limit started the waiting tasks at once")
		st = groupStats(t, e, "g")
		assert.Equal(t, 4, st.MaxConcurrency)
		assert.Equal(t, 0, st.Waiting)

		for _, g := range gates[3:] {
			close(g)
		}
		for i, h := range hs {
			assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status, "task %d", i)
		}
		require.Len(t, changes, 2)
		assert.Equal(t, groupconc.LimitChange{GroupKey: "g", Old: 4, New: 1, At: changes[0].At}, changes[0])
		assert.Equal(t, groupconc.LimitChange{GroupKey: "g", Old: 1, New: 4, At: changes[1].At}, changes[1])
		assert.Len(t, s.taken(), 6)
		require.NoError(t, e.Quiescent())
	})
}

func TestAnAdaptiveLimitStaysWithinItsBounds(t *testing.T) {
	for _, c := range []struct {
		name           string
		min, want, got int
	}{
		{"below the minimum", 2, 1, 2},
		{"zero", 0, -5, 1},
		{"above the resolved limit", 1, 1000, 6},
		{"a minimum above the resolved limit", 9, 1, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := new(script)
				s.want.Store(int64(c.want))
				e := groupconc.New(mustBuild(t, adaptiveGroups(s, 6, c.min, 0)))
				defer e.Close()
				submit(t, t.Context(), e, "g", "t", func(context.Context) (int, error) { return 0, nil }).Wait()
				assert.Equal(t, c.got, groupStats(t, e, "g").MaxConcurrency)
				lo := min(max(c.min, 1), 6)
				assert.Equal(t, [2]int{lo, 6}, s.bounds, "New's bounds")
			})
		})
	}
}

func TestTheQueueThresholdFollowsAnAdaptiveLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(script)
		e := groupconc.New(mustBuild(t, adaptiveGroups(s, 8, 1, 1.5).DefaultQueueThresholdPerGroup(10)))
		defer e.Close()
		done := func(context.Context) (int, error) { return 0, nil }
		submit(t, t.Context(), e, "g", "t", done).Wait()
		assert.Equal(t, 10, groupStats(t, e, "g").QueueThreshold, "ceil(1.5 × 8) = 12, never above the resolved 10")
		s.want.Store(3)
		submit(t, t.Context(), e, "g", "t", done).Wait()
		st := groupStats(t, e, "g")
		assert.Equal(t, 3, st.MaxConcurrency)
		assert.Equal(t, 5, st.QueueThreshold, "ceil(1.5 × 3)")

		// The lowered threshold turns away what the lowered limit sheds.
		gate := make(chan struct{})
		var hs []*groupconc.TaskHandle[int]
		for range 9 {
			hs = append(hs, submit(t, t.Context(), e, "g", "t", gated(gate, 0)))
		}
		close(gate)
		rejected := 0
		for _, h := range hs {
			if h.Wait().Status == groupconc.StatusRejected {
				rejected++
			}
		}
		assert.Equal(t, 1, rejected, "3 run, 5 wait, the ninth is turned away")
	})
}

func TestASampleTellsTheRunTimeOutcomeAndLoadAtItsStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(script)
		e := groupconc.New(mustBuild(t, adaptiveGroups(s, 2, 1, 0)))
		defer e.Close()
		start := time.Now()
		sleep := func(d time.Duration, err error) groupconc.Task[int] {
			return func(context.Context) (int, error) {
				time.Sleep(d) // fake clock: the bubble's
				return 0, err
			}
		}
		a := submit(t, t.Context(), e, "g", "a", sleep(30*time.Millisecond, nil))
		b := submit(t, t.Context(), e, "g", "b", sleep(40*time.Millisecond, errBoom))
		// c waits 30ms in line for a's permit, then runs 20ms.
		c := submit(t, t.Context(), e, "g", "c", sleep(20*time.Millisecond, nil))
		ctx, cancel := context.WithTimeout(t.Context(), 70*time.Millisecond)
		defer cancel()
		// d waits for b's permit (40ms), then its deadline ends it 30ms in.
		d := submit(t, ctx, e, "g", "d", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		})
		for _, h := range []*groupconc.TaskHandle[int]{a, b, c, d} {
			h.Wait()
		}
		got := s.taken()
		require.Len(t, got, 4)
		want := []groupconc.LimitSample{
			// a and b both hold their permits before either starts.
			{GroupKey: "g", Status: groupconc.StatusSuccess, RunTime: 30 * time.Millisecond, Running: 2, Limit: 2, End: start.Add(30 * time.Millisecond)},
			{GroupKey: "g", Status: groupconc.StatusFailed, Err: errBoom, RunTime: 40 * time.Millisecond, Running: 2, Limit: 2, End: start.Add(40 * time.Millisecond)},
			{GroupKey: "g", Status: groupconc.StatusSuccess, RunTime: 20 * time.Millisecond, Running: 2, Limit: 2, End: start.Add(50 * time.Millisecond)},
			{GroupKey: "g", Status: groupconc.StatusCancelled, Err: context.DeadlineExceeded, RunTime: 30 * time.Millisecond, Running: 2, Limit: 2, End: start.Add(70 * time.Millisecond)},
		}
		for i, w := range want {
			assert.Truef(t, got[i].End.Equal(w.End), "sample %d ends %v, want %v", i, got[i].End.Sub(start), w.End.Sub(start))
			got[i].End = w.End
			assert.Equal(t, w, got[i], "sample %d", i)
		}
	})
}

func TestOnlyTasksThatRanHoldingTheirPermitsAreSampled(t *testing.T) {
	for _, c := range []struct {
		name string
		b    func(*groupconc.PolicyBuilder) *groupconc.PolicyBuilder
	}{
		{"rejected", func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder { return b }},
		{"run by the caller-runs policy", func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
			return b.RejectionPolicy(groupconc.RejectCallerRuns)
		}},
		{"run by a handler", func(b *groupconc.PolicyBuilder) *groupconc.PolicyBuilder {
			return b.RejectionHandler(func(ctx context.Context, r *groupconc.Rejection) (any, error) { return r.Run(ctx) })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := new(script)
				e := groupconc.New(mustBuild(t, c.b(adaptiveGroups(s, 1, 1, 0).DefaultQueueThresholdPerGroup(1))))
				defer e.Close()
				gate := make(chan struct{})
				first := submit(t, t.Context(), e, "g", "first", gated(gate, 0))
				ctx, cancel := context.WithCancel(t.Context())
				waiting := submit(t, ctx, e, "g", "waiting", gated(gate, 0))
				turnedAway := submit(t, t.Context(), e, "g", "turned away", func(context.Context) (int, error) { return 0, nil })
				turnedAway.Wait()
				cancel()
				assert.Equal(t, groupconc.StatusCancelled, waiting.Wait().Status)
				close(gate)
				first.Wait()
				got := s.taken()
				require.Len(t, got, 1, "the first task's sample alone")
				assert.Equal(t, groupconc.StatusSuccess, got[0].Status)
			})
		})
	}
}

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
		require.NotEmpty(t, got)
		assert.Equal(t, "a", got[0].GroupKey, "the task's group")
		assert.Equal(t, 4, got[0].Limit, "the global cap at its start")
		assert.Equal(t, 4, got[0].Running, "tasks running in every group at its start")
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
// sample lives on the stack of the task's goroutine.
func TestAdaptiveLimitsAddNoAllocationPerTask(t *testing.T) {
	allocs := func(b *groupconc.PolicyBuilder) float64 {
		e := groupconc.New(mustBuild(t, b))
		defer e.Close()
		ctx := context.Background()
		done := func(context.Context) (int, error) { return 0, nil }
		return testing.AllocsPerRun(1000, func() {
			h, err := groupconc.Submit(ctx, e, "g", "t", done)
			if err != nil {
				panic(err)
			}
			h.Wait()
		})
	}
	off := allocs(groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(4))
	on := allocs(adaptiveGroups(new(script), 4, 1, 1))
	assert.Equal(t, off, on, "allocations per task, adaptive off then on")
}
