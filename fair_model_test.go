package groupconc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
)

// shareTask is a task of the fair-share model: its key, priority and gate,
// and whether it waits (0), runs (1) or has ended (2).
type shareTask struct {
	modelTask
	gate chan struct{}
	h    *groupconc.TaskHandle[int]
}

// TestFairShareWithParentsFollowsItsModel checks each start against a
// model of fair share with parents: at each level the sharer with work
// that holds the fewest per weight, ties to the oldest waiting task, then
// its task of the highest priority. The limit binds at the global cap
// (global) or at the top group t (tenant), and moves. Tasks are submitted,
// end, are cancelled, and their groups shut down, at random. No start may
// pass the limit, and no permit stays free while a task waits.
func TestFairShareWithParentsFollowsItsModel(t *testing.T) {
	for _, where := range []string{"global", "tenant"} {
		for seed := uint64(1); seed <= 150; seed++ {
			t.Run(fmt.Sprintf("%s/%d", where, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, 11))
					keys := modelKeys[where]
					usePrio := seed%2 == 0
					useWeights := seed%3 == 0
					limit := 1 + rng.IntN(3)
					mk := func(limit int) *groupconc.GroupPolicy { return modelPolicy(t, where, useWeights, limit) }
					e := groupconc.New(mk(limit))
					defer e.Close()
					var mu sync.Mutex
					var started []int
					var all []*shareTask
					var log []string
					submitOne := func() {
						k := keys[rng.IntN(len(keys))]
						pr := groupconc.PriorityNormal
						if usePrio {
							pr = groupconc.Priority(1 + rng.IntN(5))
						}
						tk := &shareTask{modelTask: modelTask{id: len(all), key: k, prio: pr}, gate: make(chan struct{})}
						all = append(all, tk)
						h, err := groupconc.SubmitWith(context.Background(), e, k, fmt.Sprint(tk.id), func(ctx context.Context) (int, error) {
							mu.Lock()
							started = append(started, tk.id)
							mu.Unlock()
							select {
							case <-tk.gate:
							case <-ctx.Done():
							}
							return 0, nil
						}, groupconc.SubmitOptions{Priority: pr})
						if err != nil {
							t.Fatal(err)
						}
						tk.h = h
						log = append(log, fmt.Sprintf("submit %d %s %v", tk.id, k, pr))
					}
					predict := modelPredict(func() []*shareTask { return all }, where, useWeights, func(*shareTask) int { return 1 })
					// inState returns the tasks that wait (0), run (1) or ended (2).
					inState := func(state int) []*shareTask {
						var in []*shareTask
						for _, tk := range all {
							if tk.state == state {
								in = append(in, tk)
							}
						}
						return in
					}
					nrunning := func() int { return len(inState(1)) }
					seen := 0
					check := func() {
						synctest.Wait()
						mu.Lock()
						s := append([]int(nil), started...)
						mu.Unlock()
						got := map[int]bool{}
						for ; seen < len(s); seen++ {
							got[s[seen]] = true
						}
						var want []int
						for range got {
							if nrunning() >= limit {
								t.Fatalf("started %v over the limit %d; log:\n%s", got, limit, strings.Join(log, "\n"))
							}
							p := predict()
							if p == nil {
								t.Fatalf("started %v, model has none; log:\n%s", got, strings.Join(log, "\n"))
							}
							p.state = 1
							want = append(want, p.id)
						}
						for _, id := range want {
							if !got[id] {
								t.Fatalf("started %v, model says %v; log:\n%s", got, want, strings.Join(log, "\n"))
							}
							log = append(log, fmt.Sprintf("  started %d", id))
						}
						if nrunning() < limit && predict() != nil {
							t.Fatalf("running %d < %d with %d waiting; log:\n%s", nrunning(), limit, predict().id, strings.Join(log, "\n"))
						}
					}
					for step := 0; step < 80; step++ {
						switch r := rng.IntN(20); {
						case r < 11:
							submitOne()
						case r < 17:
							if rs := inState(1); len(rs) > 0 {
								rt := rs[rng.IntN(len(rs))]
								rt.state = 2
								close(rt.gate)
								log = append(log, fmt.Sprintf("release %d", rt.id))
							}
						case r < 18:
							if ws := inState(0); len(ws) > 0 {
								w := ws[rng.IntN(len(ws))]
								w.h.Cancel()
								w.state = 2
								log = append(log, fmt.Sprintf("cancel %d", w.id))
							}
						case r < 19:
							k := keys[1+rng.IntN(len(keys)-1)]
							// ShutdownGroup ends its subtree's tasks.
							for _, tk := range all {
								if modelUnder(tk.key, k) && tk.state < 2 {
									tk.state = 2
								}
							}
							e.ShutdownGroup(k)
							log = append(log, fmt.Sprintf("shutdownGroup %s", k))
						default:
							limit = 1 + rng.IntN(3)
							if err := e.UpdatePolicy(mk(limit)); err != nil {
								t.Fatal(err)
							}
							log = append(log, fmt.Sprintf("limit %d", limit))
						}
						check()
					}
					e.Close()
					for _, tk := range all {
						if tk.state != 2 {
							close(tk.gate)
						}
					}
					for _, tk := range all {
						<-tk.h.Done()
					}
				})
			})
		}
	}
}
