package groupconc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// modelAlgo is an adaptive limit that wants what the model tells it.
type modelAlgo struct {
	mu   *sync.Mutex
	rng  *rand.Rand
	high int
}

func (a modelAlgo) Observe(groupconc.LimitSample) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return 1 + a.rng.IntN(a.high)
}

// Groups of groups under limits that move (adaptive limits, overrides,
// UpdatePolicy), with costs, priorities, pauses of parents and children,
// blocking submits and Do calls (with MaxWait, cancelled or not), displacing
// submits, ShutdownGroup and EvictGroup of subtrees, and fake time passing:
// between steps no permit stays free while a task that fits waits (I8), a
// parent's counts cover its children's (I9), and at the end every task and
// caller ends and every permit is back. FuzzOps has no adaptive limit.
func TestATreeUnderMovingLimitsNeverLeavesAPermitIdle(t *testing.T) {
	keys := []string{"t", "t/a", "t/b", "t/a/x", "u", "u/c"}
	for _, mode := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		for seed := uint64(1); seed <= 100; seed++ {
			t.Run(fmt.Sprintf("%v/%d", mode, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, 7))
					var mu sync.Mutex
					arng := rand.New(rand.NewPCG(seed, 8))
					costs := seed%2 == 0
					maxCost := 1
					if costs {
						maxCost = 3
					}
					algo := func(_ string, lo, hi int) groupconc.AdaptiveLimit { return modelAlgo{&mu, arng, max(hi, 1)} }
					build := func(rng *rand.Rand) *groupconc.PolicyBuilder {
						b := builder().Isolation(mode).ParentSeparator("/").
							PerGroupMaxConcurrency(map[string]int{"t": 1 + rng.IntN(4), "t/a": 1 + rng.IntN(3)}).
							DefaultMaxConcurrencyPerGroup(1 + rng.IntN(3)).
							DefaultQueueThresholdPerGroup(rng.IntN(4)).
							RejectionPolicy([]groupconc.RejectionPolicy{groupconc.RejectAbort, groupconc.RejectDiscardOldest, groupconc.RejectCallerRuns}[rng.IntN(3)])
						if rng.IntN(3) != 0 {
							b.AdaptiveConcurrency(groupconc.AdaptiveConfig{New: algo, QueueFactor: float64(rng.IntN(3))})
						}
						if rng.IntN(2) == 0 {
							b.PerGroupMaxInFlight(map[string]int{"t": 1 + rng.IntN(5), "t/a": 1 + rng.IntN(4), "u/c": 1 + rng.IntN(3)})
						}
						if mode == groupconc.IsolationOff && rng.IntN(2) == 0 {
							b.GlobalMaxInFlight(2 + rng.IntN(4)).GlobalQueueThreshold(rng.IntN(6))
						}
						if mode == groupconc.IsolationFairShare {
							b.GlobalMaxInFlight(2 + rng.IntN(4))
							if rng.IntN(2) == 0 {
								b.AdaptiveGlobal(groupconc.AdaptiveConfig{New: algo})
							}
						}
						return b
					}
					policyOf := func(rng *rand.Rand) *groupconc.GroupPolicy { return mustBuild(t, build(rng)) }
					b := build(rng)
					e := newExecutor(t, b)
					var ks []*gatedTask
					var hs []*groupconc.TaskHandle[int]
					paused := map[string]bool{}
					var calls sync.WaitGroup
					var cancels []context.CancelFunc
					for step := 0; step < 80; step++ {
						switch op := rng.IntN(17); {
						case op == 16:
							if len(hs) > 0 {
								hs[rng.IntN(len(hs))].Cancel()
							}
						case op == 14: // fake time passes: MaxWait, adaptive windows
							time.Sleep(time.Duration(1+rng.IntN(2000)) * time.Millisecond)
						case op == 15:
							require.NoError(t, e.UpdatePolicy(policyOf(rng)))
						case op == 10 || op == 11:
							// a blocking submit or a Do, on a goroutine of its own
							k := newGatedTask(t, step)
							ks = append(ks, k)
							o := groupconc.SubmitOptions{Priority: groupconc.Priority(1 + rng.IntN(5)), Block: true, MaxWait: time.Duration(rng.IntN(3)) * time.Second}
							if costs {
								o.Cost = 1 + rng.IntN(maxCost)
							}
							key := keys[rng.IntN(len(keys))]
							ctx, cancel := context.WithCancel(context.Background())
							cancels = append(cancels, cancel)
							asDo := op == 11
							calls.Go(func() {
								if asDo {
									_, _ = groupconc.Do(ctx, e, key, k.Fn, o)
									return
								}
								if h, err := groupconc.SubmitWith(ctx, e, key, fmt.Sprint("b", step), k.Fn, o); err == nil {
									h.Wait()
								}
							})
						case op == 12:
							if len(cancels) > 0 {
								cancels[rng.IntN(len(cancels))]()
							}
						case op == 13:
							key := keys[rng.IntN(len(keys))]
							if rng.IntN(2) == 0 {
								e.ShutdownGroup(key)
							} else {
								e.EvictGroup(key)
								for k := range paused {
									if k == key || strings.HasPrefix(k, key+"/") {
										delete(paused, k)
									}
								}
							}
						case op < 5:
							k := newGatedTask(t, step)
							o := groupconc.SubmitOptions{Priority: groupconc.Priority(1 + rng.IntN(5))}
							if costs {
								o.Cost = 1 + rng.IntN(maxCost)
							}
							ks = append(ks, k)
							hs = append(hs, submitGated(t, e, keys[rng.IntN(len(keys))], "", k, o))
						case op < 8:
							if len(ks) > 0 {
								ks[rng.IntN(len(ks))].Release()
							}
						case op == 8:
							key := keys[rng.IntN(len(keys))]
							if _, ok := e.GroupStats(key); !ok {
								break
							}
							p := !paused[key]
							var o groupconc.GroupOverride
							if p {
								o.Paused = &p
							}
							if e.SetGroupOverride(key, o) == nil {
								paused[key] = p
							}
						case op == 9:
							key := keys[rng.IntN(len(keys))]
							n := 1 + rng.IntN(4)
							if _, ok := e.GroupStats(key); ok && !paused[key] {
								_ = e.SetGroupOverride(key, groupconc.GroupOverride{MaxConcurrency: &n})
							}
						}
						synctest.Wait()
						if !checkNoIdlePermits(t, e, maxCost) || !checkSubtreeSums(t, e) || !checkNoCallerBlockedOnRoom(t, e, maxCost) {
							t.Fatalf("after step %d", step)
						}
					}
					for key, p := range paused {
						if p {
							require.NoError(t, e.SetGroupOverride(key, groupconc.GroupOverride{}))
						}
					}
					for _, k := range ks {
						k.Release()
					}
					calls.Wait()
					for _, c := range cancels {
						c()
					}
					quiesce(t, e, hs...)
					s := e.Stats()
					require.Equal(t, s.Submitted, s.Succeeded+s.Failed+s.Cancelled+s.Rejected)
				})
			})
		}
	}
}
