package groupconc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Random live changes on a tree of groups of depth 2 or 3 (or, one seed in
// five, on groups with no parent), with costs 1 to 4, in both modes. Each
// start must fit the limits in force at that moment (liveOracle), counting
// what the running tasks hold. A lowered limit
// drains: the tasks over it run on, and nothing new starts there until
// they end. Some steps make two changes at once. At the end every handle
// completes and every count is back to zero. LIVE_TREE_SEEDS sets how many
// seeds run per mode (default 30), LIVE_TREE_SEED0 the first, and
// LIVE_TREE_STEPS the steps of each (default 60).
func TestLiveTreeStartsFitTheLimitsInForce(t *testing.T) {
	env := func(name string, def int) int {
		if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
			return n
		}
		return def
	}
	seeds, first, steps := env("LIVE_TREE_SEEDS", 30), env("LIVE_TREE_SEED0", 0), env("LIVE_TREE_STEPS", 60)
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for seed := first; seed < first+seeds; seed++ {
			t.Run(strconv.Itoa(seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { runLiveTree(t, mode, uint64(seed), steps) })
			})
		}
	})
}

// liveRun is one run: the executor, the oracle and the test's tasks.
type liveRun struct {
	t        *testing.T
	mode     groupconc.IsolationMode
	rng      *rand.Rand
	keys     []string
	parents  map[string]string
	lim      liveLimits // the settings of the last policy made
	maxCost  int
	o        *liveOracle
	e        *groupconc.GroupExecutor
	step     int
	calls    sync.WaitGroup // the blocking submits
	together sync.WaitGroup // the changes made at once
	tasks    []*liveTask
	ctxs     []context.Context
	cancels  []context.CancelFunc

	mu      sync.Mutex
	hs      []*groupconc.TaskHandle[int]
	ran     map[*groupconc.TaskHandle[int]]*liveTask
	started map[*liveTask]bool
}

func runLiveTree(t *testing.T, mode groupconc.IsolationMode, seed uint64, steps int) {
	r := &liveRun{t: t, mode: mode, rng: rand.New(rand.NewPCG(seed, 0x11e)), maxCost: 4,
		ran: map[*groupconc.TaskHandle[int]]*liveTask{}, started: map[*liveTask]bool{}}
	rng := r.rng
	r.keys, r.parents = liveTree(rng)
	r.lim = liveLimits{global: liveRandom(rng, 2, 6, 3), globalQueue: groupconc.Unlimited,
		conc: map[string]int{}, inFlight: map[string]int{}, queue: map[string]int{}, weight: map[string]int{}}
	for _, k := range r.keys {
		r.lim.conc[k], r.lim.inFlight[k] = liveRandom(rng, 1, 4, 6), liveRandom(rng, 1, 5, 2)
		r.lim.queue[k], r.lim.weight[k] = liveRandom(rng, 0, 3, 1+rng.IntN(3)), 1
	}
	if seed%3 == 0 || len(r.parents) == 0 && seed%2 == 0 { // lines of tasks of cost 1 hand permits on
		r.maxCost = 1
	}
	if len(r.parents) == 0 { // a full global cap with groups to serve
		r.lim.global = 2 + rng.IntN(3)
	}
	r.o = newLiveOracle(r.lim.clone(), r.parents)
	r.e = groupconc.New(r.lim.policy(t, mode, r.parents))
	defer func() { _ = r.e.Close() }()
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		r.ctxs, r.cancels = append(r.ctxs, ctx), append(r.cancels, cancel)
	}
	defer func() {
		for _, c := range r.cancels {
			c()
		}
	}()
	var trace []string
	for step := range steps {
		r.step = step
		k := r.keys[rng.IntN(len(r.keys))]
		var what string
		if op := rng.IntN(25); op < 5 { // two changes at once
			k2 := r.keys[rng.IntN(len(r.keys))]
			for k2 == k { // each override is the oracle's to set first
				k2 = r.keys[rng.IntN(len(r.keys))]
			}
			a, b := liveKind(rng.IntN(int(liveKinds))), liveKind(rng.IntN(int(liveKinds)))
			if a.clashes(b) {
				b = liveRelease
			}
			r.o.loosen()
			what = r.change(a, k, false) + " || " + r.change(b, k2, false)
			r.together.Wait()
			synctest.Wait()
			r.o.tighten()
		} else {
			what = r.change(liveOps[op-5], k, true)
		}
		synctest.Wait()
		trace = append(trace, fmt.Sprintf("%d: %s", step, what))
		if !r.o.check(t, r.e, r.keys) || !checkNoIdlePermits(t, r.e, r.maxCost) || !checkSubtreeSums(t, r.e) {
			_ = r.e.Close() // so that the bubble ends
			r.releaseAll()
			t.Fatalf("after steps:\n  %s", strings.Join(trace, "\n  "))
		}
	}
	r.finish(strings.Join(trace, "\n  "))
}

// finish drops every override, one at a time, opens every gate and checks
// that every handle completes and every count is back to zero.
func (r *liveRun) finish(trace string) {
	t := r.t
	for _, k := range r.keys {
		if _, ok := r.e.GroupStats(k); ok {
			r.setOverride(k, groupconc.GroupOverride{})
			synctest.Wait() // what it starts starts under the limits it set
		}
	}
	r.releaseAll()
	synctest.Wait()
	require.True(t, r.o.check(t, r.e, r.keys), "after the end:\n  %s", trace)
	quiesce(t, r.e, r.hs...)
	for _, h := range r.hs {
		switch res := h.Wait(); res.Status {
		case groupconc.StatusSuccess:
			assert.True(t, r.started[r.ran[h]], "task %s succeeded without running", h.TaskID())
		case groupconc.StatusRejected:
			assert.False(t, r.started[r.ran[h]], "task %s ran, then was rejected", h.TaskID())
		}
	}
	s := r.e.Stats()
	assert.Zero(t, s.Running+s.Waiting+s.Blocked+s.GlobalInFlight, "%+v", s)
	assert.Equal(t, s.Submitted, s.Succeeded+s.Failed+s.Cancelled+s.Rejected, "%+v", s)
	for gs := range r.e.AllGroupStats() {
		assert.Zero(t, gs.Running+gs.Waiting+gs.InFlight+gs.RunningCost+gs.Blocked, "%+v", gs)
	}
}

func (r *liveRun) releaseAll() {
	for _, x := range r.tasks {
		x.release()
	}
	r.calls.Wait()
}
