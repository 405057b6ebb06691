package groupconc_test

// The storm: every API racing every other in real time, both modes, with
// the policy changed live underneath. Short in go test; `-run Storm -args
// -long` runs it for 20 s a mode.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

var long = flag.Bool("long", false, "run the storm tests for 20 s a mode")

// stormShape is the groups a storm runs in.
type stormShape struct {
	keys []string
	// evicted are the keys EvictGroup is called on. An evicted group's
	// tasks may still run beside the new group's, so none is gauged.
	evicted []string
	// gauged names, for a key, the gauges its tasks enter: its own and its
	// ancestors'. Each bounds its subtree's running tasks.
	gauged map[string][]string
	// parents makes "/" separate a key from its parent's, and gives the
	// tasks costs of 0 to 5.
	parents bool
}

var flatStorm = stormShape{
	keys:    []string{"a", "b", "c", "d"},
	evicted: []string{"c", "d"},
	gauged:  map[string][]string{"a": {"a"}, "b": {"b"}},
}

// The highest limits any storm policy or override sets.
const (
	stormMaxGlobal = 8
	stormMaxGroup  = 4
)

// stormPolicy returns a random policy of mode; its global cap is never
// Unlimited, so the global gauge has a bound.
func stormPolicy(r *rand.Rand, mode groupconc.IsolationMode, l groupconc.TaskLifecycleListener, sh stormShape) *groupconc.GroupPolicy {
	pick := func(xs ...int) int { return xs[r.IntN(len(xs))] }
	u := groupconc.Unlimited
	b := groupconc.NewPolicyBuilder().Isolation(mode).TaskLifecycleListener(l).
		GlobalMaxInFlight(pick(2, 4, stormMaxGlobal)).
		DefaultMaxConcurrencyPerGroup(pick(1, 2, 3)).
		DefaultMaxInFlightPerGroup(pick(u, 2, 4)).
		DefaultQueueThresholdPerGroup(pick(u, 0, 1, 4)).
		RejectionPolicy([]groupconc.RejectionPolicy{groupconc.RejectAbort, groupconc.RejectDiscard, groupconc.RejectDiscardOldest}[r.IntN(3)]).
		IdleGroupTTL(time.Duration(pick(0, 0, 1, 5)) * time.Millisecond)
	if sh.parents {
		b.ParentSeparator("/")
	}
	if mode == groupconc.IsolationOff {
		b.GlobalQueueThreshold(pick(u, 0, 2, 8))
	} else {
		b.DefaultWeightPerGroup(pick(1, 2, 3))
	}
	p, err := b.Build()
	if err != nil {
		panic(err)
	}
	return p
}

// stormGauges bound what runs: globally and for each gauged key.
type stormGauges struct {
	global gauge
	group  map[string]*gauge
}

func TestStormEveryAPIRacingKeepsEveryPromise(t *testing.T) {
	d := 300 * time.Millisecond
	if *long {
		d = 20 * time.Second
	}
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) { storm(t, mode, d, flatStorm) })
}

func storm(t *testing.T, mode groupconc.IsolationMode, d time.Duration, sh stormShape) {
	var submitted, ended atomic.Int64
	l := groupconc.ListenerFuncs{
		Submitted: func(string, string) { submitted.Add(1) },
		Completed: func(string, string, groupconc.GroupResult[any]) { ended.Add(1) },
		Rejected:  func(string, string, string) { ended.Add(1) },
	}
	e := groupconc.New(stormPolicy(rand.New(rand.NewPCG(1, 2)), mode, l, sh))
	gs := &stormGauges{group: map[string]*gauge{}}
	for _, names := range sh.gauged {
		for _, n := range names {
			gs.group[n] = &gauge{}
		}
	}
	cost := func(r *rand.Rand) int {
		if sh.parents {
			return r.IntN(6)
		}
		return 0
	}
	task := func(key string, kind int) groupconc.Task[int] {
		return func(ctx context.Context) (int, error) {
			gs.global.enter()
			defer gs.global.exit()
			for _, n := range sh.gauged[key] {
				gs.group[n].enter()
				defer gs.group[n].exit()
			}
			switch kind {
			case 0:
				return 0, errBoom
			case 1:
				panic(errBoom)
			case 2: // until cancelled, or long enough to be caught running
				select {
				case <-ctx.Done():
					return 0, ctx.Err()
				case <-time.After(2 * time.Millisecond):
				}
			}
			if kind == 3 { // a Do inside it: a task of its own, holding no permit
				if _, err := groupconc.Do(ctx, e, key, func(ctx context.Context) (int, error) { return 0, ctx.Err() }, groupconc.SubmitOptions{}); err != nil {
					return 0, err
				}
			}
			select {
			case <-time.After(time.Duration(kind) * 20 * time.Microsecond):
			case <-ctx.Done():
			}
			return kind, nil
		}
	}

	var mu sync.Mutex
	var hs []*groupconc.TaskHandle[int]
	keep := func(h *groupconc.TaskHandle[int]) {
		mu.Lock()
		hs = append(hs, h)
		mu.Unlock()
	}
	anyHandle := func(r *rand.Rand) *groupconc.TaskHandle[int] {
		mu.Lock()
		defer mu.Unlock()
		if len(hs) == 0 {
			return nil
		}
		return hs[r.IntN(len(hs))]
	}

	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	var ids atomic.Int64
	for w := range 6 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for time.Now().Before(deadline) {
				key := sh.keys[r.IntN(len(sh.keys))]
				id := fmt.Sprint(ids.Add(1))
				switch op := r.IntN(20); {
				case op < 8:
					var h *groupconc.TaskHandle[int]
					var err error
					if c := cost(r); c == 0 {
						h, err = groupconc.Submit(t.Context(), e, key, id, task(key, r.IntN(8)))
					} else {
						h, err = groupconc.SubmitWith(t.Context(), e, key, id, task(key, r.IntN(8)), groupconc.SubmitOptions{Cost: c})
					}
					if assert.NoError(t, err) {
						keep(h)
					}
				case op < 11:
					ctx, cancel := context.WithTimeout(t.Context(), time.Duration(r.IntN(3))*time.Millisecond)
					o := groupconc.SubmitOptions{Block: r.IntN(2) == 0, Priority: groupconc.Priority(r.IntN(5)), MaxWait: time.Duration(1+r.IntN(2)) * time.Millisecond, Cost: cost(r)} // a paused group may never free a slot
					h, err := groupconc.SubmitWith(context.WithoutCancel(ctx), e, key, id, task(key, r.IntN(8)), o)
					cancel()
					if err == nil {
						keep(h)
					} else {
						assert.True(t, errors.Is(err, context.DeadlineExceeded) || errors.Is(err, groupconc.ErrGroupShutdown) || errors.Is(err, groupconc.ErrGroupEvicted) || errors.Is(err, context.Canceled), "SubmitWith: %v", err)
					}
				case op == 11:
					batch := []groupconc.GroupTask[int]{{GroupKey: key, TaskID: id + "x", Task: task(key, 5)}, {GroupKey: "b", TaskID: id + "y", Task: task("b", 0)}}
					ctx, cancel := context.WithTimeout(t.Context(), 5*time.Millisecond) // a paused group runs nothing
					rs, err := groupconc.ExecuteAll(ctx, e, batch)
					cancel()
					if err == nil || assert.ErrorIs(t, err, context.DeadlineExceeded) {
						assert.Len(t, rs, 2)
					}
				case op == 12:
					if h := anyHandle(r); h != nil {
						h.Cancel()
					}
				case op == 13:
					assert.NoError(t, e.UpdatePolicy(stormPolicy(r, mode, l, sh)))
				case op == 14:
					n := 1 + r.IntN(stormMaxGroup)
					paused := r.IntN(3) == 0
					o := groupconc.GroupOverride{MaxConcurrency: &n, Paused: &paused}
					if r.IntN(2) == 0 {
						o = groupconc.GroupOverride{}
					}
					if err := e.SetGroupOverride(key, o); err != nil {
						assert.ErrorIs(t, err, groupconc.ErrUnknownGroup)
					}
				case op == 15:
					e.ShutdownGroup(key)
				case op == 16:
					e.EvictGroup(sh.evicted[r.IntN(len(sh.evicted))])
				case op == 17:
					// Read while groups come and go, Groups may be one ahead
					// for a moment (an eviction counts out after it deletes).
					// Once idle it must be exact: see the end.
					e.Stats()
				case op == 18:
					for range e.AllGroupStats() {
					}
					e.GroupStats(key)
				default:
					e.ExplainGroup(key)
					ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
					_, err := groupconc.Do(ctx, e, key, task(key, 3+r.IntN(5)), groupconc.SubmitOptions{Priority: groupconc.Priority(1 + r.IntN(5)), Cost: cost(r)})
					cancel()
					var re *groupconc.RejectedError
					if err != nil && !errors.As(err, &re) {
						assert.True(t, errors.Is(err, context.DeadlineExceeded) || errors.Is(err, groupconc.ErrGroupShutdown) || errors.Is(err, groupconc.ErrGroupEvicted) || errors.Is(err, context.Canceled), "Do: %v", err)
					}
				}
			}
		})
	}
	wg.Wait()
	for _, k := range sh.keys { // resume every paused group
		_ = e.SetGroupOverride(k, groupconc.GroupOverride{})
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, h := range hs { // I3, I7: every handle completes
		_, err := h.Await(ctx)
		require.NotErrorIs(t, err, context.DeadlineExceeded, "task %s/%s never completed", h.GroupKey(), h.TaskID())
		r := h.Wait()
		assert.NotContains(t, fmt.Sprint(r.Err), "idle group forgotten", "task %s/%s ended by its group being forgotten", h.GroupKey(), h.TaskID())
	}
	require.NoError(t, e.Shutdown(ctx))
	assert.NoError(t, e.Quiescent(), "I2: every permit back")

	// I1: the highest limits any policy or override set.
	assert.LessOrEqual(t, gs.global.max.Load(), int64(stormMaxGlobal), "global")
	for k, g := range gs.group {
		assert.LessOrEqual(t, g.max.Load(), int64(stormMaxGroup), "group %s", k)
	}
	st := e.Stats()
	assert.Equal(t, st.Submitted, st.Succeeded+st.Failed+st.Cancelled+st.Rejected, "every task counted once: %+v", st)
	assert.Equal(t, uint64(submitted.Load()), st.Submitted, "OnSubmitted against Submitted")
	assert.Equal(t, submitted.Load(), ended.Load(), "I4: every submitted task told ended once")
	n := 0
	for range e.AllGroupStats() {
		n++
	}
	// An idle TTL may forget groups between the two reads, never add one.
	after := e.Stats().Groups
	assert.True(t, after <= n && n <= st.Groups, "Stats().Groups %d, then %d, against the %d groups AllGroupStats yields", st.Groups, after, n)
	if testing.Verbose() {
		t.Logf("%v: %d handles, %s", mode, len(hs), strings.TrimSpace(fmt.Sprintf("%+v", st)))
	}
}
