package benchmarks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
)

// The fairness measurements run on synctest's fake clock, so the figures
// are exact and the same on every machine: each task "works" by sleeping a
// fixed service time. Run them with
//
//	go test -run Fairness -v ./benchmarks

const (
	fairCap     = 16
	fairService = 10 * time.Millisecond
)

// TestFairnessBackloggedTenantsShareTheCapByWeight measures, for 8
// backlogged tenants under a global cap of 16, the slot-seconds each gets
// while all are backlogged, against its weighted max-min share, as Jain's
// index (1 is perfectly fair). Each tenant submits its whole backlog in
// turn, the order in which IsolationOff serves them. With "every other at
// highest", tenants t0, t2, t4 and t6 submit every task at
// PriorityHighest and the others at the default: under fair share the
// group is chosen before the priority, so the index must not move.
func TestFairnessBackloggedTenantsShareTheCapByWeight(t *testing.T) {
	weighted := []int{1, 1, 1, 1, 2, 2, 4, 4}
	equal := []int{1, 1, 1, 1, 1, 1, 1, 1}
	for _, c := range []struct {
		mode    groupconc.IsolationMode
		weights []int
		highest bool    // every other tenant at PriorityHighest
		want    float64 // least Jain's index the mode promises
	}{
		{groupconc.IsolationFairShare, weighted, false, 0.99},
		{groupconc.IsolationFairShare, equal, false, 0.99},
		{groupconc.IsolationOff, equal, false, 0}, // no promise: first come, first served
		{groupconc.IsolationFairShare, weighted, true, 0.99},
		{groupconc.IsolationFairShare, equal, true, 0.99},
		{groupconc.IsolationOff, equal, true, 0}, // the global line serves by priority
	} {
		var jain float64
		var shares []string
		prio := func(int) groupconc.Priority { return 0 }
		if c.highest {
			prio = func(i int) groupconc.Priority { return everyOtherHighest(i) }
		}
		synctest.Test(t, func(t *testing.T) { jain, shares = backlogged(t, c.mode, c.weights, prio) })
		prios := "all at normal"
		if c.highest {
			prios = "t0 t2 t4 t6 at highest"
		}
		t.Logf("%-10s weights %v, %-22s: Jain's index %.4f; slot-seconds/share per tenant: %s",
			c.mode, c.weights, prios, jain, strings.Join(shares, " "))
		if jain < c.want {
			t.Errorf("%v weights %v, %s: Jain's index %.4f, want >= %.2f", c.mode, c.weights, prios, jain, c.want)
		}
	}
}

// everyOtherHighest is PriorityHighest for even tenants, the default for
// odd ones.
func everyOtherHighest(i int) groupconc.Priority {
	if i%2 == 0 {
		return groupconc.PriorityHighest
	}
	return 0
}

func backlogged(t *testing.T, mode groupconc.IsolationMode, weights []int, prio func(tenant int) groupconc.Priority) (jain float64, shares []string) {
	b := groupconc.NewPolicyBuilder().Isolation(mode).GlobalMaxInFlight(fairCap).DefaultMaxConcurrencyPerGroup(fairCap)
	w := map[string]int{}
	total := 0
	for i, n := range weights {
		w[fmt.Sprint("t", i)] = n
		total += n
	}
	if mode == groupconc.IsolationFairShare {
		b.PerGroupWeight(w)
	}
	e := newExecutor(t, b)
	const perTenant = 400 // the lightest tenant's backlog lasts past the window
	var hs [][]*groupconc.TaskHandle[struct{}]
	for i := range weights {
		hs = append(hs, submitN(t, e, fmt.Sprint("t", i), perTenant, prio(i)))
	}
	window := 100 * fairService // every tenant is backlogged throughout
	var xs []float64
	for i, tenant := range hs {
		var slot time.Duration
		start := tenant[0].Wait().Submitted
		for _, h := range tenant {
			r := h.Wait()
			from, to := max(r.Start.Sub(start), 0), min(r.End.Sub(start), window)
			slot += max(to-from, 0)
		}
		share := float64(fairCap) * float64(weights[i]) / float64(total) * window.Seconds()
		xs = append(xs, slot.Seconds()/share)
		shares = append(shares, fmt.Sprintf("%.2f", slot.Seconds()/share))
	}
	require(t, e.Shutdown(context.Background()))
	var sum, sq float64
	for _, x := range xs {
		sum += x
		sq += x * x
	}
	return sum * sum / (float64(len(xs)) * sq), shares
}

// TestFairnessLightTenantStartDelayUnderAHeavyBurst measures how long a
// light tenant's tasks wait to start (Start - Submitted) while a heavy
// tenant has a burst of 100× the cap queued: one light task every 7ms, 100
// in all. The heavy tenant can fill the cap (its concurrency is the cap)
// or cannot (its concurrency is half of it), and submits at the default
// priority or, every task, at PriorityHighest (the light tenant stays at
// the default): under fair share the delays must not move.
func TestFairnessLightTenantStartDelayUnderAHeavyBurst(t *testing.T) {
	for _, c := range []struct {
		mode      groupconc.IsolationMode
		heavyConc int
		heavyPrio groupconc.Priority
		wantP99   time.Duration // -1: no promise
	}{
		{groupconc.IsolationFairShare, fairCap, 0, fairService},
		{groupconc.IsolationFairShare, fairCap / 2, 0, 0},
		{groupconc.IsolationOff, fairCap, 0, -1},
		{groupconc.IsolationOff, fairCap / 2, 0, -1},
		{groupconc.IsolationFairShare, fairCap, groupconc.PriorityHighest, fairService},
		{groupconc.IsolationFairShare, fairCap / 2, groupconc.PriorityHighest, 0},
		{groupconc.IsolationOff, fairCap, groupconc.PriorityHighest, -1},
		{groupconc.IsolationOff, fairCap / 2, groupconc.PriorityHighest, -1},
	} {
		var p50, p99, worst time.Duration
		synctest.Test(t, func(t *testing.T) { p50, p99, worst = lightDelays(t, c.mode, c.heavyConc, c.heavyPrio) })
		t.Logf("%-10s heavy concurrency %2d, heavy at %-7v: light start delay p50 %v p99 %v max %v",
			c.mode, c.heavyConc, c.heavyPrio, p50, p99, worst)
		if c.wantP99 >= 0 && p99 > c.wantP99 {
			t.Errorf("%v heavy concurrency %d, heavy at %v: p99 %v, want <= %v", c.mode, c.heavyConc, c.heavyPrio, p99, c.wantP99)
		}
	}
}

func lightDelays(t *testing.T, mode groupconc.IsolationMode, heavyConc int, heavyPrio groupconc.Priority) (p50, p99, worst time.Duration) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode).GlobalMaxInFlight(fairCap).
		PerGroupMaxConcurrency(map[string]int{"heavy": heavyConc, "light": fairCap}))
	heavy := submitN(t, e, "heavy", 100*fairCap, heavyPrio)
	var light []*groupconc.TaskHandle[struct{}]
	for range 100 {
		time.Sleep(7 * time.Millisecond) // fake clock: the light tenant's arrivals
		light = append(light, submitN(t, e, "light", 1, 0)...)
	}
	var delays []time.Duration
	for _, h := range light {
		delays = append(delays, h.Wait().QueueWait())
	}
	for _, h := range heavy {
		h.Wait()
	}
	require(t, e.Shutdown(context.Background()))
	slices.Sort(delays)
	return delays[len(delays)/2], delays[len(delays)*99/100-1], delays[len(delays)-1]
}

func newExecutor(t *testing.T, b *groupconc.PolicyBuilder) *groupconc.GroupExecutor {
	t.Helper()
	p, err := b.Build()
	require(t, err)
	return groupconc.New(p)
}

// submitN submits n tasks to key at priority prio that each work for
// fairService.
func submitN(t *testing.T, e *groupconc.GroupExecutor, key string, n int, prio groupconc.Priority) []*groupconc.TaskHandle[struct{}] {
	t.Helper()
	hs := make([]*groupconc.TaskHandle[struct{}], n)
	for i := range hs {
		h, err := groupconc.SubmitWith(context.Background(), e, key, fmt.Sprint(key, "-", i), serve,
			groupconc.SubmitOptions{Priority: prio})
		require(t, err)
		hs[i] = h
	}
	return hs
}

// serve is a task that works for fairService.
func serve(context.Context) (struct{}, error) {
	time.Sleep(fairService) // fake clock: the task's service time
	return struct{}{}, nil
}

func require(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
