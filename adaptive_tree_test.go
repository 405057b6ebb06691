package groupconc_test

// Adaptive limits over groups of groups and costs: an oracle of what runs
// checks every subtree's permits after each step, while samples move the
// limits, overrides set, drop and pause, and costly tasks wait.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
)

// dial is an AdaptiveLimit per key, whose limit the test sets. A key not
// in adaptive gets no algorithm, so its limit stays fixed.
type dial struct {
	mu       sync.Mutex
	adaptive map[string]bool                    // guarded by mu
	want     map[string]int                     // guarded by mu; 0 keeps the sample's limit
	seen     map[string][]groupconc.LimitSample // guarded by mu: the samples each key's algorithm took
}

func newDial(keys ...string) *dial {
	d := &dial{adaptive: map[string]bool{}, want: map[string]int{}, seen: map[string][]groupconc.LimitSample{}}
	for _, k := range keys {
		d.adaptive[k] = true
	}
	return d
}

type dialed struct {
	d   *dial
	key string
}

func (d *dial) new(key string, _, _ int) groupconc.AdaptiveLimit {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.adaptive[key] {
		return nil
	}
	return dialed{d, key}
}

func (d *dial) set(key string, n int) {
	d.mu.Lock()
	d.want[key] = n
	d.mu.Unlock()
}

func (x dialed) Observe(ls groupconc.LimitSample) int {
	x.d.mu.Lock()
	defer x.d.mu.Unlock()
	x.d.seen[x.key] = append(x.d.seen[x.key], ls)
	if n := x.d.want[x.key]; n != 0 {
		return n
	}
	return ls.Limit
}

// treeRun is one running task as the oracle sees it.
type treeRun struct {
	key  string
	cost int
	held map[string]int // scope -> permits held there ("" is the global cap)
	gate chan struct{}
}

// treeOracle notes what starts and ends. The test checks it between steps,
// when nothing moves.
type treeOracle struct {
	mu      sync.Mutex
	running []*treeRun      // guarded by mu
	started map[string]bool // guarded by mu: scopes a task started in since the last check
	global  bool
}

// scopes returns the scopes a task of key passes: its group, its
// ancestors (by "/"), and the global cap if it is fair share's.
func (o *treeOracle) scopes(key string) []string {
	s := []string{key}
	for i := strings.LastIndex(key, "/"); i > 0; i = strings.LastIndex(key[:i], "/") {
		s = append(s, key[:i])
	}
	if o.global {
		s = append(s, "")
	}
	return s
}

func (o *treeOracle) task(key string, cost int) (groupconc.Task[int], *treeRun) {
	r := &treeRun{key: key, cost: cost, held: map[string]int{}, gate: make(chan struct{})}
	return func(context.Context) (int, error) {
		o.mu.Lock()
		o.running = append(o.running, r)
		for _, s := range o.scopes(key) {
			o.started[s] = true
		}
		o.mu.Unlock()
		<-r.gate
		o.mu.Lock()
		for i, x := range o.running {
			if x == r {
				o.running = append(o.running[:i], o.running[i+1:]...)
				break
			}
		}
		o.mu.Unlock()
		return 0, nil
	}, r
}

// check tops each running task's permits up to min(cost, limit now), as a
// raised limit does, and reports a scope a task started in that holds more
// than its limit, or a paused scope a task started in.
func (o *treeOracle) check(t *testing.T, e *groupconc.GroupExecutor, step int) {
	t.Helper()
	limit := func(s string) (int, bool) {
		if s == "" {
			return e.Stats().GlobalMaxInFlight, false
		}
		st, ok := e.GroupStats(s)
		if !ok {
			t.Fatalf("step %d: scope %q has a running task but no stats", step, s)
		}
		return st.MaxConcurrency, st.Paused
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	sum := map[string]int{}
	for _, r := range o.running {
		for _, s := range o.scopes(r.key) {
			l, _ := limit(s)
			r.held[s] = max(r.held[s], min(r.cost, l))
			sum[s] += r.held[s]
		}
	}
	for s := range o.started {
		l, paused := limit(s)
		if sum[s] > l {
			t.Errorf("step %d: a task started in %q, which holds %d permits over its limit %d", step, s, sum[s], l)
		}
		if paused {
			t.Errorf("step %d: a task started in paused %q", step, s)
		}
	}
	clear(o.started)
}

func (o *treeOracle) pick(rng *rand.Rand) *treeRun {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.running) == 0 {
		return nil
	}
	return o.running[rng.IntN(len(o.running))]
}

// treeCase is one shape: which keys adapt, and the policy.
type treeCase struct {
	name     string
	adaptive []string // "" is the global cap
	build    func(d *dial) *groupconc.PolicyBuilder
}

func treeCases() []treeCase {
	base := func(iso groupconc.IsolationMode) *groupconc.PolicyBuilder {
		return groupconc.NewPolicyBuilder().Isolation(iso).ParentSeparator("/").
			PerGroupMaxConcurrency(map[string]int{"t": 5, "s": 3}).DefaultMaxConcurrencyPerGroup(4).
			DefaultQueueThresholdPerGroup(100)
	}
	ac := func(d *dial) groupconc.AdaptiveConfig { return groupconc.AdaptiveConfig{New: d.new, Min: 1} }
	return []treeCase{
		{"adaptive users under fixed tenants", []string{"t/u1", "t/u2", "s/v"}, func(d *dial) *groupconc.PolicyBuilder {
			return base(groupconc.IsolationOff).AdaptiveConcurrency(ac(d))
		}},
		{"adaptive tenants over fixed users", []string{"t", "s"}, func(d *dial) *groupconc.PolicyBuilder {
			return base(groupconc.IsolationFairShare).AdaptiveConcurrency(ac(d))
		}},
		{"every layer adaptive under an adaptive global cap", []string{"t", "t/u1", "t/u2", "s", "s/v", ""}, func(d *dial) *groupconc.PolicyBuilder {
			return base(groupconc.IsolationFairShare).GlobalMaxInFlight(7).AdaptiveConcurrency(ac(d)).AdaptiveGlobal(ac(d))
		}},
	}
}

// Limits per subtree hold after every step while adaptive limits move at
// any layer, tasks of costs 1 and 4 mix, and overrides set, drop and
// pause. Every task ends once its gate opens: none waits for ever.
func TestAdaptiveLimitsOverParentsAndCostsHoldPerSubtree(t *testing.T) {
	keys := []string{"t", "t/u1", "t/u2", "s", "s/v"}
	for _, tc := range treeCases() {
		for seed := range uint64(6) {
			t.Run(fmt.Sprintf("%s/seed=%d", tc.name, seed), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { treeSteps(t, tc, keys, seed) })
			})
		}
	}
}

func treeSteps(t *testing.T, tc treeCase, keys []string, seed uint64) {
	d := newDial(tc.adaptive...)
	o := &treeOracle{started: map[string]bool{}, global: tc.adaptive[len(tc.adaptive)-1] == ""}
	e := groupconc.New(mustBuild(t, tc.build(d)))
	defer e.Close()
	rng := rand.New(rand.NewPCG(seed, 6))
	var hs []*groupconc.TaskHandle[int]
	on, off := true, false
	for step := range 300 {
		switch n := rng.IntN(20); {
		case n < 7:
			k := keys[rng.IntN(len(keys))]
			cost := []int{1, 4}[rng.IntN(2)]
			fn, _ := o.task(k, cost)
			h, err := groupconc.SubmitWith(t.Context(), e, k, fmt.Sprint(step), fn, groupconc.SubmitOptions{Cost: cost})
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			hs = append(hs, h)
		case n < 13:
			if r := o.pick(rng); r != nil {
				close(r.gate)
			}
		case n < 16:
			d.set(tc.adaptive[rng.IntN(len(tc.adaptive))], rng.IntN(7))
		default:
			k := keys[rng.IntN(len(keys))]
			var ov groupconc.GroupOverride
			switch rng.IntN(4) {
			case 0:
				ov.MaxConcurrency = ptr(rng.IntN(5) + 1)
			case 1:
				ov.Paused = &on
			case 2:
				ov.Paused = &off
			}
			if err := e.SetGroupOverride(k, ov); err != nil && !errors.Is(err, groupconc.ErrUnknownGroup) {
				t.Fatalf("step %d: override of %s: %v", step, k, err)
			}
		}
		synctest.Wait()
		o.check(t, e, step)
		if t.Failed() {
			break
		}
	}
	// Resume everything and open every gate: every task ends.
	for _, k := range keys {
		_ = e.SetGroupOverride(k, groupconc.GroupOverride{})
	}
	for {
		synctest.Wait()
		r := o.pick(rng)
		if r == nil {
			break
		}
		close(r.gate)
	}
	for i, h := range hs {
		select {
		case <-h.Done():
		default:
			t.Fatalf("task %d never ended", i)
		}
	}
}
