package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// churnKeys are two trees of groups: parents run tasks of their own too.
var churnKeys = []string{"t", "t/a", "t/b", "t/a/x", "u", "u/c"}

// churnPolicy builds a policy over churnKeys with limits drawn from r.
func churnPolicy(t *testing.T, r *rand.Rand, mode groupconc.IsolationMode, l *churnLog, ttl time.Duration) *groupconc.GroupPolicy {
	rp := []groupconc.RejectionPolicy{groupconc.RejectAbort, groupconc.RejectDiscard, groupconc.RejectDiscardOldest, groupconc.RejectCallerRuns}
	return mustBuild(t, groupconc.NewPolicyBuilder().
		Isolation(mode).
		ParentSeparator("/").
		GlobalMaxInFlight(2+r.IntN(6)).
		DefaultMaxConcurrencyPerGroup(1+r.IntN(4)).
		DefaultMaxInFlightPerGroup(1+r.IntN(6)).
		DefaultQueueThresholdPerGroup(r.IntN(4)).
		RejectionPolicy(rp[r.IntN(len(rp))]).
		IdleGroupTTL(ttl).
		TaskLifecycleListener(l))
}

// churnRun drives one random churn of every entry point and lifecycle call,
// then checks that every task ended once, in order, and the stats are zero.
func churnRun(t *testing.T, seed uint64, mode groupconc.IsolationMode, back bool) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e37))
	l := &churnLog{events: map[string][]string{}, back: back}
	ttl := time.Duration(r.IntN(3)) * 2 * time.Millisecond
	e := groupconc.New(churnPolicy(t, r, mode, l, ttl))
	l.e.Store(e)
	var gates []chan struct{}
	var hs []*groupconc.TaskHandle[int]
	var wg sync.WaitGroup
	key := func() string { return churnKeys[r.IntN(len(churnKeys))] }
	opts := func() groupconc.SubmitOptions {
		return groupconc.SubmitOptions{
			Cost:     r.IntN(5),
			Priority: groupconc.Priority(1 + r.IntN(5)),
			Block:    r.IntN(3) == 0,
			MaxWait:  time.Duration(r.IntN(6)) * time.Millisecond,
		}
	}
	ctxFor := func() context.Context {
		if r.IntN(3) > 0 {
			return t.Context()
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Duration(r.IntN(4))*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	id := 0
	closed := false
	for step := 0; step < 120; step++ {
		gate := make(chan struct{})
		gates = append(gates, gate)
		id++
		switch op := r.IntN(12); op {
		case 0, 1: // a task, some whose OnStarted calls Do
			name := fmt.Sprintf("s-%d", id)
			if r.IntN(3) == 0 {
				name = fmt.Sprintf("L-%d", id)
			}
			ctx, k, o, fn := ctxFor(), key(), opts(), blockCtx(gate)
			wg.Go(func() {
				h, err := groupconc.SubmitWith(ctx, e, k, name, fn, o)
				if err == nil {
					l.mu.Lock()
					hs = append(hs, h)
					l.mu.Unlock()
				}
			})
		case 2: // a Do on its own goroutine
			ctx, k, o, fn := ctxFor(), key(), opts(), blockCtx(gate)
			wg.Go(func() { _, _ = groupconc.Do(ctx, e, k, fn, o) })
		case 3: // a task that calls Do under its own permits
			k, inner, o, fn := key(), key(), opts(), blockCtx(gate)
			o.Block = false // this goroutine must not wait
			h, err := groupconc.SubmitWith(t.Context(), e, k, fmt.Sprintf("i-%d", id), func(ctx context.Context) (int, error) {
				return groupconc.Do(ctx, e, inner, fn, groupconc.SubmitOptions{Cost: 3})
			}, o)
			if err == nil {
				l.mu.Lock()
				hs = append(hs, h)
				l.mu.Unlock()
			}
		case 4: // ExecuteAllWith across groups, with costs
			var ts []groupconc.GroupTask[int]
			for j := range 1 + r.IntN(4) {
				ts = append(ts, groupconc.GroupTask[int]{GroupKey: key(), TaskID: fmt.Sprintf("x-%d-%d", id, j), Task: blockCtx(gate)})
			}
			ctx, o := ctxFor(), opts()
			wg.Go(func() {
				res, _ := groupconc.ExecuteAllWith(ctx, e, ts, o)
				assert.Len(t, res, len(ts))
			})
		case 5: // pause or resume, or drop the override
			p, k := r.IntN(2) == 0, key()
			o := groupconc.GroupOverride{Paused: &p}
			if r.IntN(4) == 0 {
				o = groupconc.GroupOverride{}
			} else if r.IntN(3) == 0 {
				c := 1 + r.IntN(3)
				o.MaxConcurrency = &c
			}
			if err := e.SetGroupOverride(k, o); errors.Is(err, groupconc.ErrUnknownGroup) && !closed {
				// Make it known with a task that waits until the end.
				if h, err := groupconc.Submit(t.Context(), e, k, fmt.Sprintf("k-%d", id), blockCtx(gate)); err == nil {
					l.mu.Lock()
					hs = append(hs, h)
					l.mu.Unlock()
				}
				_ = e.SetGroupOverride(k, o)
			}
		case 6: // a live change of the limits
			if !closed {
				_ = e.UpdatePolicy(churnPolicy(t, r, mode, l, ttl))
			}
		case 7:
			e.ShutdownGroup(key())
		case 8:
			e.EvictGroup(key())
		case 9: // some gates open
			for _, g := range gates[:len(gates)-1] {
				if r.IntN(2) == 0 {
					select {
					case <-g:
					default:
						close(g)
					}
				}
			}
		case 10:
			time.Sleep(time.Duration(r.IntN(5)) * time.Millisecond) // fake clock: inside the bubble
		case 11:
			l.mu.Lock()
			if len(hs) > 0 {
				hs[r.IntN(len(hs))].Cancel()
			}
			l.mu.Unlock()
		}
		if r.IntN(150) == 0 && !closed {
			closed = true
			ctx, cancel := context.WithTimeout(t.Context(), time.Duration(r.IntN(3))*time.Millisecond)
			wg.Go(func() { defer cancel(); _ = e.Shutdown(ctx) })
		}
		synctest.Wait()
		churnCheckSigns(t, e)
		checkSubtreeSums(t, e)
	}
	if r.IntN(2) == 0 {
		require.NoError(t, e.Close())
	} else {
		ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
		_ = e.Shutdown(ctx)
		cancel()
	}
	for _, g := range gates {
		select {
		case <-g:
		default:
			close(g)
		}
	}
	wg.Wait()
	synctest.Wait()
	for _, h := range hs {
		h.Wait()
	}
	churnCheckZero(t, e)
	l.check(t)
	if testing.Verbose() {
		t.Logf("%+v; %d Do from a listener", e.Stats(), l.dos.Load())
	}
}

// churnCheckSigns checks that no count has gone below zero.
func churnCheckSigns(t *testing.T, e *groupconc.GroupExecutor) {
	t.Helper()
	s := e.Stats()
	assert.False(t, s.Running < 0 || s.Waiting < 0 || s.GlobalInFlight < 0 || s.Blocked < 0, "a negative count: %+v", s)
	for gs := range e.AllGroupStats() {
		assert.False(t, gs.Running < 0 || gs.RunningCost < 0 || gs.Waiting < 0 || gs.WaitingGlobal < 0 ||
			gs.InFlight < 0 || gs.Blocked < 0 || gs.OldestWait < 0 || gs.OldestRunning < 0, "a negative count: %+v", gs)
		assert.LessOrEqual(t, gs.WaitingGlobal, gs.Waiting, "%s WaitingGlobal within Waiting", gs.GroupKey)
	}
}

// churnCheckZero checks that nothing is left counted once every task ended.
func churnCheckZero(t *testing.T, e *groupconc.GroupExecutor) {
	t.Helper()
	s := e.Stats()
	assert.Zero(t, s.Running, "Running")
	assert.Zero(t, s.Waiting, "Waiting")
	assert.Zero(t, s.GlobalInFlight, "GlobalInFlight")
	assert.Zero(t, s.Blocked, "Blocked")
	assert.Equal(t, s.Submitted, s.Succeeded+s.Failed+s.Cancelled+s.Rejected, "outcomes against Submitted: %+v", s)
	for gs := range e.AllGroupStats() {
		assert.Zero(t, gs.Running, "%s Running", gs.GroupKey)
		assert.Zero(t, gs.RunningCost, "%s RunningCost", gs.GroupKey)
		assert.Zero(t, gs.Waiting, "%s Waiting", gs.GroupKey)
		assert.Zero(t, gs.WaitingGlobal, "%s WaitingGlobal", gs.GroupKey)
		assert.Zero(t, gs.InFlight, "%s InFlight", gs.GroupKey)
		assert.Zero(t, gs.Blocked, "%s Blocked", gs.GroupKey)
		assert.Zero(t, gs.OldestWait, "%s OldestWait", gs.GroupKey)
		assert.Zero(t, gs.OldestRunning, "%s OldestRunning", gs.GroupKey)
	}
	n := 0
	for gs := range e.AllGroupStats() {
		n++
		one, ok := e.GroupStats(gs.GroupKey)
		assert.True(t, ok, "%s yielded but unknown", gs.GroupKey)
		assert.Equal(t, gs.Parent, one.Parent, "%s Parent", gs.GroupKey)
	}
	assert.Equal(t, n, e.Stats().Groups, "Stats().Groups against AllGroupStats")
	assert.NoError(t, e.Quiescent(), "I2: permits held after the churn")
}

// churnSeeds is how many churns a mode runs; -long runs more.
func churnSeeds() uint64 {
	if *long {
		return 3000
	}
	return 40
}

func TestChurnOfEveryEntryLeavesNothingCounted(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for seed := range churnSeeds() {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { churnRun(t, seed, mode, false) })
			})
		}
	})
}

func TestChurnWithAListenerCallingBackLeavesNothingCounted(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for seed := range churnSeeds() {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { churnRun(t, seed, mode, true) })
			})
		}
	})
}
