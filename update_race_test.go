package groupconc_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// upRacePolicies are the two policies the race test alternates: each limit
// is higher in one and lower in the other.
func upRacePolicies(t *testing.T, mode groupconc.IsolationMode) [2]*groupconc.GroupPolicy {
	b1 := groupconc.NewPolicyBuilder().Isolation(mode).
		GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(2).
		DefaultMaxInFlightPerGroup(3).DefaultQueueThresholdPerGroup(16)
	b2 := groupconc.NewPolicyBuilder().Isolation(mode).
		GlobalMaxInFlight(6).DefaultMaxConcurrencyPerGroup(1).
		DefaultMaxInFlightPerGroup(2).DefaultQueueThresholdPerGroup(3).
		RejectionPolicy(groupconc.RejectDiscard)
	if mode == groupconc.IsolationOff {
		b1.GlobalQueueThreshold(8)
		b2.GlobalQueueThreshold(3)
	}
	return [2]*groupconc.GroupPolicy{mustBuild(t, b1), mustBuild(t, b2)}
}

// The limits the gauges are checked against: max(old, new) of each.
const (
	upRaceGlobalMax = 6
	upRaceConcMax   = 2
)

func TestUpdatePolicyRacingWithSubmitCancelShutdownGroupEvictGroupAndCloseKeepsTheLimitsAndLosesNoTask(t *testing.T) {
	for _, mode := range fsModes {
		t.Run(mode.String(), func(t *testing.T) {
			upRace(t, mode)
		})
	}
}

func upRace(t *testing.T, mode groupconc.IsolationMode) {
	policies := upRacePolicies(t, mode)
	e := groupconc.New(policies[0])
	// Gauges of running functions: global, and per group for the groups
	// never evicted (old and new tasks of an evicted key may together
	// exceed its limit: see EvictGroup). Evicted keys count globally.
	var global gauge
	kept := []string{"k0", "k1", "k2"}
	evicted := []string{"e0", "e1"}
	perGroup := map[string]*gauge{}
	for _, k := range kept {
		perGroup[k] = new(gauge)
	}
	keys := append(append([]string(nil), kept...), evicted...)

	perSubmitter := 400
	if testing.Short() {
		perSubmitter = 100
	}
	var (
		stop     atomic.Bool
		updates  atomic.Int64
		mu       sync.Mutex
		handles  []*groupconc.TaskHandle[int]
		loops    sync.WaitGroup
		submits  sync.WaitGroup
		misuse   atomic.Value // first unexpected error of a loop
		reportIf = func(err error) {
			if err != nil {
				misuse.CompareAndSwap(nil, err)
			}
		}
	)
	task := func(key string, spins int) groupconc.Task[int] {
		return func(ctx context.Context) (int, error) {
			global.enter()
			defer global.exit()
			if g := perGroup[key]; g != nil {
				g.enter()
				defer g.exit()
			}
			for range spins {
				if ctx.Err() != nil {
					return 0, ctx.Err()
				}
				runtime.Gosched()
			}
			return 1, nil
		}
	}

	loops.Go(func() { // UpdatePolicy, alternating
		for i := 0; !stop.Load(); i++ {
			reportIf(e.UpdatePolicy(policies[i%2]))
			updates.Add(1)
			runtime.Gosched()
		}
	})
	loops.Go(func() { // ShutdownGroup and EvictGroup
		for i := 0; !stop.Load(); i++ {
			e.ShutdownGroup(kept[i%len(kept)])
			if i%3 == 0 {
				e.EvictGroup(evicted[i%len(evicted)])
			}
			for range 20 {
				runtime.Gosched()
			}
		}
	})
	for s := range 4 {
		submits.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(s), 7))
			var window []*groupconc.TaskHandle[int] // at most 8 of ours unfinished
			for i := range perSubmitter {
				if len(window) == 8 {
					<-window[0].Done()
					window = window[1:]
				}
				key := keys[rng.IntN(len(keys))]
				h, err := groupconc.Submit(context.Background(), e, key, fmt.Sprint(s, "-", i), task(key, rng.IntN(20)))
				if err != nil {
					reportIf(err)
					return
				}
				if rng.IntN(8) == 0 {
					h.Cancel()
				}
				window = append(window, h)
				mu.Lock()
				handles = append(handles, h)
				mu.Unlock()
			}
		})
	}
	submits.Wait()
	// Close while UpdatePolicy still runs: it then reports ErrClosed.
	closed := make(chan struct{})
	loops.Go(func() {
		defer close(closed)
		assert.NoError(t, e.Close())
	})
	<-closed
	stop.Store(true)
	loops.Wait()

	if err, _ := misuse.Load().(error); err != nil && !errors.Is(err, groupconc.ErrClosed) {
		t.Errorf("a loop failed: %v", err)
	}
	assert.ErrorIs(t, e.UpdatePolicy(policies[1]), groupconc.ErrClosed, "UpdatePolicy after Close")

	// Every handle completes: no task lost.
	watchdog, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	statuses := map[groupconc.TaskStatus]int{}
	for _, h := range handles {
		r, err := h.Await(watchdog)
		require.NoError(t, watchdog.Err(), "task %s/%s never completed", h.GroupKey(), h.TaskID())
		if err != nil {
			assert.ErrorIs(t, err, groupconc.ErrRejected, "Await of %s/%s", h.GroupKey(), h.TaskID())
		}
		statuses[r.Status]++
	}
	require.NoError(t, e.Shutdown(watchdog), "the executor drains once every task returned")
	assert.NoError(t, e.Quiescent())

	s := e.Stats()
	assert.Equal(t, uint64(len(handles)), s.Submitted)
	assert.Equal(t, s.Submitted, s.Succeeded+s.Failed+s.Cancelled+s.Rejected, "outcome counters %+v", s)
	assert.Zero(t, s.Running+s.Waiting+s.GlobalInFlight, "live counts %+v", s)
	assert.LessOrEqual(t, global.max.Load(), int64(upRaceGlobalMax), "most tasks running at once")
	for k, g := range perGroup {
		assert.LessOrEqual(t, g.max.Load(), int64(upRaceConcMax), "most tasks of %s running at once", k)
	}
	t.Logf("%d tasks %v, %d updates, most running %d", len(handles), statuses, updates.Load(), global.max.Load())
}
