package groupconc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// The behaviour suite of isolation (docs/scheduling.md): fair-share
// isolation and weights, seen through the public API only.

// fsModes are both isolation modes, for the properties they share.
var fsModes = []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare}

// fsStarts records the order in which tasks start.
type fsStarts struct {
	mu  sync.Mutex
	ids []string // guarded by mu
}

// task returns k's function that first records id as started.
func (s *fsStarts) task(id string, k *gatedTask) groupconc.Task[int] {
	return func(ctx context.Context) (int, error) {
		s.mu.Lock()
		s.ids = append(s.ids, id)
		s.mu.Unlock()
		return k.Fn(ctx)
	}
}

// list returns the ids started so far, in start order.
func (s *fsStarts) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.ids)
}

// fsBurstThenOne submits a burst of 1 000 gated tasks to group "a"
// (concurrency 2) under a global cap of 4 and then one task to group "b",
// and returns b's task, its handle and the executor, with the gate of a's
// burst. Call it inside a bubble.
func fsBurstThenOne(t *testing.T, mode groupconc.IsolationMode) (*groupconc.GroupExecutor, chan struct{}, []*groupconc.TaskHandle[int], *gatedTask, *groupconc.TaskHandle[int]) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode).
		GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(2))
	gate := make(chan struct{})
	burst := make([]*groupconc.TaskHandle[int], 1000)
	for i := range burst {
		burst[i] = submit(t, t.Context(), e, "a", fmt.Sprint("a", i), gated(gate, i))
	}
	b := newGatedTask(t, 1)
	hb := submit(t, t.Context(), e, "b", "b0", b.Fn)
	synctest.Wait()
	return e, gate, burst, b, hb
}

func TestFairShareStartsALoneTaskOfAnotherGroupAtOnceBehindABurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, gate, burst, b, hb := fsBurstThenOne(t, groupconc.IsolationFairShare)
		assert.True(t, b.started.Load(), "b's task started behind a's burst of 1 000: got false, want true")
		s := e.Stats()
		assert.Equal(t, 3, s.Running, "Stats.Running: a's 2 and b's 1")
		assert.Equal(t, 3, s.GlobalInFlight, "Stats.GlobalInFlight counts running tasks only")
		assert.Equal(t, 998, s.Waiting, "Stats.Waiting")

		b.Release()
		assert.Equal(t, groupconc.StatusSuccess, hb.Wait().Status)
		openGate(t, gate, burst, "burst")
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
	})
}

func TestIsolationOffKeepsALoneTaskOfAnotherGroupBehindABurstHoldingTheGlobalPermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, gate, burst, b, hb := fsBurstThenOne(t, groupconc.IsolationOff)
		assert.False(t, b.started.Load(), "b's task started while a's burst held every global permit: got true, want false")
		s := e.Stats()
		assert.Equal(t, 2, s.Running, "Stats.Running: a's 2")
		assert.Equal(t, 4, s.GlobalInFlight, "Stats.GlobalInFlight: a's burst holds the cap")
		gs := groupStats(t, e, "b")
		assert.Equal(t, [2]int{0, 1}, [2]int{gs.Running, gs.Waiting}, "b: running, waiting")

		openGate(t, gate, burst, "burst")
		synctest.Wait()
		assert.True(t, b.started.Load(), "b's task once a's burst is over")
		b.Release()
		assert.Equal(t, groupconc.StatusSuccess, hb.Wait().Status)
		synctest.Wait()
		assert.NoError(t, e.Quiescent())
	})
}

func TestFairShareGivesEachFreedGlobalPermitToTheFewestRunningPerWeightThenTheOldestHead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Twelve fillers hold the twelve global permits; a (weight 1), b
		// (weight 2) and c (weight 3) queue six tasks each, interleaved, at
		// the global line. Each filler released frees one permit.
		e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
			GlobalMaxInFlight(12).DefaultMaxConcurrencyPerGroup(12).
			PerGroupWeight(map[string]int{"b": 2}).
			WeightResolver(func(key string) int {
				if key == "c" {
					return 3
				}
				return 0 // below 1: becomes 1
			}))
		var starts fsStarts
		fillers := make([]*gatedTask, 12)
		for i := range fillers {
			fillers[i] = newGatedTask(t, i)
			submit(t, t.Context(), e, "f", fmt.Sprint("f", i), fillers[i].Fn)
		}
		synctest.Wait()
		for i := range 6 {
			for _, key := range []string{"a", "b", "c"} {
				id := fmt.Sprint(key, i)
				submit(t, t.Context(), e, key, id, starts.task(id, newGatedTask(t, i)))
				time.Sleep(time.Millisecond) // fake clock: each head older than the next
			}
		}
		synctest.Wait()
		require.Empty(t, starts.list(), "tasks started with every global permit held")
		for key, w := range map[string]int{"a": 1, "b": 2, "c": 3, "f": 1} {
			assert.Equal(t, w, groupStats(t, e, key).Weight, "GroupStats(%q).Weight", key)
		}

		// running/weight: a 0/1 b 0/2 c 0/3 → tie, oldest head a0; then
		// a 1 b 0 c 0 → b0; a 1 b 1/2 c 0 → c0; c 1/3 → c1; b 1/2 < c 2/3
		// → b1; c 2/3 < 1 → c2; all 1 → oldest head a1 (a1 < b2 < c3);
		// a 2 b 1 c 1 → b2; b 3/2 c 1 → c3; c 4/3 → c4; b 3/2 < c 5/3 →
		// b3; b 2 c 5/3 → c5.
		want := []string{"a0", "b0", "c0", "c1", "b1", "c2", "a1", "b2", "c3", "c4", "b3", "c5"}
		for i, f := range fillers {
			f.Release()
			synctest.Wait()
			got := starts.list()
			require.Len(t, got, i+1, "tasks started after %d fillers ended: %v", i+1, got)
			assert.Equal(t, want[i], got[i], "task started by filler %d's permit", i)
		}
		assert.Equal(t, want, starts.list())
		s := e.Stats()
		assert.Equal(t, 12, s.GlobalInFlight)
		assert.Equal(t, 6, s.Waiting, "a4 a5 b4 b5 and a2 a3, still waiting")
	})
}

func TestFairShareBreaksTiesByTheTimeWaitedInTheGlobalLineNotSinceSubmit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
			GlobalMaxInFlight(1))
		var starts fsStarts
		tasks := map[string]*gatedTask{}
		submit := func(key, id string) {
			tasks[id] = newGatedTask(t, 0)
			submit(t, t.Context(), e, key, id, starts.task(id, tasks[id]))
			synctest.Wait()
			time.Sleep(time.Second) // fake clock: the next task joins later
		}
		submit("y", "y0") // runs, holding the one global permit
		submit("a", "a0") // holds a's concurrency permit, joins the global line 1st
		submit("a", "a1") // waits for a's concurrency permit: submitted early
		submit("b", "b0") // joins the global line 2nd
		submit("c", "c0") // joins the global line 3rd
		step := func(id, want string) {
			tasks[id].Release()
			synctest.Wait()
			got := starts.list()
			assert.Equal(t, want, got[len(got)-1], "started once %s ended: %v", id, got)
		}
		step("y0", "a0")
		step("a0", "b0") // a1 joins the global line only now, behind c0
		step("b0", "c0") // a and c both run 0: c0 joined the line first
		step("c0", "a1")
		step("a1", "a1")
		assert.Equal(t, []string{"y0", "a0", "b0", "c0", "a1"}, starts.list())
	})
}

func TestTasksOfOneGroupStartInSubmissionOrderInBothModes(t *testing.T) {
	for _, mode := range fsModes {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode).
					GlobalMaxInFlight(3).
					PerGroupMaxConcurrency(map[string]int{"a": 2, "b": 1}).
					PerGroupMaxInFlight(map[string]int{"a": 3}))
				var starts fsStarts
				running := map[string]*gatedTask{}
				for i := range 20 {
					for _, key := range []string{"a", "b"} {
						id := fmt.Sprintf("%s%02d", key, i)
						k := newGatedTask(t, i)
						running[id] = k
						submit(t, t.Context(), e, key, id, starts.task(id, k))
						synctest.Wait() // tasks admitted at once start one by one
					}
				}
				// Release the running tasks one at a time, in random order: each
				// release starts at most one task of each group.
				seed := rand.Uint64()
				t.Logf("seed %d", seed)
				rng := rand.New(rand.NewPCG(seed, 0))
				released := map[string]bool{}
				for range 40 {
					synctest.Wait()
					var live []string
					for _, id := range starts.list() {
						if !released[id] {
							live = append(live, id)
						}
					}
					require.NotEmpty(t, live, "nothing running, started %v", starts.list())
					id := live[rng.IntN(len(live))]
					released[id] = true
					running[id].Release()
				}
				synctest.Wait()
				var a, b []string
				for _, id := range starts.list() {
					if id[0] == 'a' {
						a = append(a, id)
					} else {
						b = append(b, id)
					}
				}
				assert.True(t, slices.IsSorted(a), "a started out of submission order: %v", a)
				assert.True(t, slices.IsSorted(b), "b started out of submission order: %v", b)
				assert.Len(t, starts.list(), 40)
				assert.NoError(t, e.Quiescent())
			})
		})
	}
}
