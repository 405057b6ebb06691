package groupconc_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// costScript drives an executor of fair share with tasks that run until
// released, and reports which started.
type costScript struct {
	t     *testing.T
	e     *groupconc.GroupExecutor
	mu    sync.Mutex
	start []string
	gates map[string]chan struct{}
	hs    map[string]*groupconc.TaskHandle[int]
}

func newCostScript(t *testing.T, p *groupconc.GroupPolicy) *costScript {
	return &costScript{t: t, e: groupconc.New(p), gates: map[string]chan struct{}{}, hs: map[string]*groupconc.TaskHandle[int]{}}
}

func (s *costScript) submit(id, key string, cost int, prio groupconc.Priority) {
	gate := make(chan struct{})
	s.gates[id] = gate
	h, err := groupconc.SubmitWith(context.Background(), s.e, key, id, func(ctx context.Context) (int, error) {
		s.mu.Lock()
		s.start = append(s.start, id)
		s.mu.Unlock()
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return 0, nil
	}, groupconc.SubmitOptions{Cost: cost, Priority: prio})
	require.NoError(s.t, err)
	s.hs[id] = h
}

func (s *costScript) release(id string) { close(s.gates[id]) }

// started returns the tasks started since the last call, sorted.
func (s *costScript) started() string {
	synctest.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.start
	s.start = nil
	slices.Sort(r)
	return fmt.Sprint(r)
}

func (s *costScript) close() {
	s.e.Close()
	for id, gate := range s.gates {
		select {
		case <-gate:
		default:
			close(gate)
		}
		<-s.hs[id].Done()
	}
}

// A costly task of t waiting while a permit of t's limit is free is not
// overtaken by the cheaper task of t's first child, whose arrival makes
// t's line one served by child: nothing overtakes a task waiting for
// permits.
func TestACostlyTaskWaitingIsNotOvertakenAsItsGroupGetsAChild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).ParentSeparator("/").
			DefaultMaxConcurrencyPerGroup(groupconc.Unlimited).PerGroupMaxConcurrency(map[string]int{"t": 3}).Build()
		require.NoError(t, err)
		s := newCostScript(t, p)
		defer s.close()
		s.submit("t0", "t", 2, groupconc.PriorityNormal)
		assert.Equal(t, "[t0]", s.started())
		s.submit("t1", "t", 2, groupconc.PriorityNormal) // waits, one permit free
		assert.Equal(t, "[]", s.started())
		s.submit("x1", "t/x", 1, groupconc.PriorityNormal)
		assert.Equal(t, "[]", s.started(), "x1 went ahead of t1, which waits for permits")
		s.release("t0")
		assert.Equal(t, "[t1 x1]", s.started())
	})
}

// ShutdownGroup of a parent sweeps its whole subtree before the permits a
// chosen costly task of it waited for are handed on. Handed on after the
// grandchild's sweep alone, one went to a cancelled task of a/x. It
// counted in a's share, so b6 went ahead of a7, though a, after the
// shutdown, held none and b one.
func TestShutdownOfAParentHandsOnByTheSharesOfWhatStays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
			ParentSeparator("/").DefaultMaxConcurrencyPerGroup(groupconc.Unlimited).
			PerGroupWeight(map[string]int{"a/x": 3, "b": 2, "a": 2})
		capped := func(n int) *groupconc.GroupPolicy {
			p, err := b.GlobalMaxInFlight(n).Build()
			require.NoError(t, err)
			return p
		}
		s := newCostScript(t, capped(6))
		defer s.close()
		s.submit("c0", "c", 3, groupconc.PriorityNormal)
		require.NoError(t, s.e.UpdatePolicy(capped(2)))
		s.submit("x1", "a/x", 2, groupconc.PriorityLow)
		s.submit("p2", "a/x/p", 2, groupconc.PriorityLowest)
		s.submit("x3", "a/x", 1, groupconc.PriorityLow)
		s.submit("p4", "a/x/p", 3, groupconc.PriorityNormal)
		s.submit("z5", "b/z", 1, groupconc.PriorityHigh)
		s.submit("b6", "b", 1, groupconc.PriorityHighest)
		s.submit("a7", "a", 2, groupconc.PriorityHigh)
		require.NoError(t, s.e.UpdatePolicy(capped(6)))
		assert.Equal(t, "[c0 x1 z5]", s.started())
		s.release("x1")
		assert.Equal(t, "[]", s.started(), "p4 is chosen: it needs 3, and 2 are free")
		s.e.ShutdownGroup("a/x")
		assert.Equal(t, "[a7]", s.started(), "a holds none, b one")
	})
}

// Under fair share a share is the permits held, and a task holding the
// whole global cap, its cost being above it, holds what a raise added
// too. Here a holds 3 and b 3, so the permit c gives back goes to b's
// older waiter. Counted by what a1 took (2), it went to a's.
func TestAShareCountsWhatARaiseAddedToAWholeLimitTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		capped := func(n int) *groupconc.GroupPolicy {
			p, err := groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
				DefaultMaxConcurrencyPerGroup(groupconc.Unlimited).GlobalMaxInFlight(n).Build()
			require.NoError(t, err)
			return p
		}
		s := newCostScript(t, capped(2))
		defer s.close()
		s.submit("a1", "a", 3, groupconc.PriorityNormal) // takes the whole cap, 2
		assert.Equal(t, "[a1]", s.started())
		require.NoError(t, s.e.UpdatePolicy(capped(7))) // a1 is topped up to 3
		s.submit("b1", "b", 3, groupconc.PriorityNormal)
		s.submit("c1", "c", 1, groupconc.PriorityNormal)
		assert.Equal(t, "[b1 c1]", s.started())
		s.submit("b2", "b", 1, groupconc.PriorityNormal)
		s.submit("a2", "a", 1, groupconc.PriorityNormal)
		s.release("c1")
		assert.Equal(t, "[b2]", s.started(), "a holds 3 of the cap, as b does")
		st, _ := s.e.GroupStats("a")
		assert.Equal(t, 3, st.RunningCost)
	})
}
