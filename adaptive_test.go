package groupconc_test

// Adaptive limits: the hook that feeds each finished task's sample to an
// AdaptiveLimit and applies what it returns (docs/adaptive.md;
// the algorithms and the simulation are package adapt's).

import (
	"context"
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
			// a may start before b is admitted, or after (Running 1 or 2).
			// a and b may start before c and d wait in line, or after.
			{GroupKey: "g", TopGroupKey: "g", Status: groupconc.StatusSuccess, RunTime: 30 * time.Millisecond, Running: got[0].Running, Limit: 2, Waiting: got[0].Waiting, End: start.Add(30 * time.Millisecond)},
			{GroupKey: "g", TopGroupKey: "g", Status: groupconc.StatusFailed, Err: errBoom, RunTime: 40 * time.Millisecond, Running: 2, Limit: 2, Waiting: got[1].Waiting, End: start.Add(40 * time.Millisecond)},
			// d waits in line while c starts.
			{GroupKey: "g", TopGroupKey: "g", Status: groupconc.StatusSuccess, RunTime: 20 * time.Millisecond, Running: 2, Limit: 2, Waiting: 1, End: start.Add(50 * time.Millisecond)},
			{GroupKey: "g", TopGroupKey: "g", Status: groupconc.StatusCancelled, Err: context.DeadlineExceeded, RunTime: 30 * time.Millisecond, Running: 2, Limit: 2, End: start.Add(70 * time.Millisecond)},
		}
		assert.Contains(t, []int{1, 2}, got[0].Running)
		assert.Contains(t, []int{0, 1, 2}, got[0].Waiting)
		assert.Contains(t, []int{0, 1, 2}, got[1].Waiting)
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

// A task that began before UpdatePolicy gives its sample to the algorithms
// it began under. What they want is not applied: the new policy's limits
// stay as it resolved them, and the executor goes on taking updates.
func TestASampleFromBeforeUpdatePolicyLeavesTheNewLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := new(script)
		b := adaptiveGroups(s, 5, 1, 0).Isolation(groupconc.IsolationFairShare).GlobalMaxInFlight(4).
			AdaptiveGlobal(groupconc.AdaptiveConfig{New: s.new})
		e := newExecutor(t, b)
		gate := make(chan struct{})
		h := submit(t, t.Context(), e, "g", "t", block(gate))
		synctest.Wait()
		require.NoError(t, e.UpdatePolicy(mustBuild(t, b)))
		s.want.Store(2)
		close(gate)
		h.Wait()
		require.Len(t, s.taken(), 2, "sampled by the group's algorithm and the cap's")
		assert.Equal(t, 5, groupStats(t, e, "g").MaxConcurrency, "the group's limit")
		assert.Equal(t, 4, e.Stats().GlobalMaxInFlight, "the global cap")
		require.NoError(t, e.UpdatePolicy(mustBuild(t, b)))
	})
}

// An adaptive group's queue threshold follows its limit from the start,
// before any sample: ceil(1.5 × 2) = 3, below the resolved 10.
func TestAnAdaptiveGroupsQueueThresholdFollowsItsLimitFromTheStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, adaptiveGroups(new(script), 2, 1, 1.5).DefaultQueueThresholdPerGroup(10))
		gate := make(chan struct{})
		h := submit(t, t.Context(), e, "g", "t", gated(gate, 0))
		assert.Equal(t, 3, groupStats(t, e, "g").QueueThreshold)
		close(gate)
		h.Wait()
	})
}
