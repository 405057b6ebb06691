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
// turn, the order in which IsolationOff serves them.
func TestFairnessBackloggedTenantsShareTheCapByWeight(t *testing.T) {
	weighted := []int{1, 1, 1, 1, 2, 2, 4, 4}
	equal := []int{1, 1, 1, 1, 1, 1, 1, 1}
	for _, c := range []struct {
		mode    groupconc.IsolationMode
		weights []int
		want    float64 // least Jain's index the mode promises
	}{
		{groupconc.IsolationFairShare, weighted, 0.99},
		{groupconc.IsolationFairShare, equal, 0.99},
		{groupconc.IsolationOff, equal, 0}, // no promise: first come, first served
	} {
		var jain float64
		var shares []string
		synctest.Test(t, func(t *testing.T) { jain, shares = backlogged(t, c.mode, c.weights) })
		t.Logf("%-10s weights %v: Jain's index %.4f; slot-seconds/share per tenant: %s",
			c.mode, c.weights, jain, strings.Join(shares, " "))
		if jain < c.want {
			t.Errorf("%v weights %v: Jain's index %.4f, want >= %.2f", c.mode, c.weights, jain, c.want)
		}
	}
}

func backlogged(t *testing.T, mode groupconc.IsolationMode, weights []int) (jain float64, shares []string) {
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
		hs = append(hs, submitN(t, e, fmt.Sprint("t", i), perTenant))
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
// or cannot (its concurrency is half of it).
func TestFairnessLightTenantStartDelayUnderAHeavyBurst(t *testing.T) {
	for _, c := range []struct {
		mode      groupconc.IsolationMode
		heavyConc int
		wantP99   time.Duration // -1: no promise
	}{
		{groupconc.IsolationFairShare, fairCap, fairService},
		{groupconc.IsolationFairShare, fairCap / 2, 0},
		{groupconc.IsolationOff, fairCap, -1},
		{groupconc.IsolationOff, fairCap / 2, -1},
	} {
		var p50, p99, worst time.Duration
		synctest.Test(t, func(t *testing.T) { p50, p99, worst = lightDelays(t, c.mode, c.heavyConc) })
		t.Logf("%-10s heavy concurrency %2d: light start delay p50 %v p99 %v max %v", c.mode, c.heavyConc, p50, p99, worst)
		if c.wantP99 >= 0 && p99 > c.wantP99 {
			t.Errorf("%v heavy concurrency %d: p99 %v, want <= %v", c.mode, c.heavyConc, p99, c.wantP99)
		}
	}
}

func lightDelays(t *testing.T, mode groupconc.IsolationMode, heavyConc int) (p50, p99, worst time.Duration) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode).GlobalMaxInFlight(fairCap).
		PerGroupMaxConcurrency(map[string]int{"heavy": heavyConc, "light": fairCap}))
	heavy := submitN(t, e, "heavy", 100*fairCap)
	var light []*groupconc.TaskHandle[struct{}]
	for range 100 {
		time.Sleep(7 * time.Millisecond) // fake clock: the light tenant's arrivals
		light = append(light, submitN(t, e, "light", 1)...)
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

// submitN submits n tasks to key that each work for fairService.
func submitN(t *testing.T, e *groupconc.GroupExecutor, key string, n int) []*groupconc.TaskHandle[struct{}] {
	t.Helper()
	hs := make([]*groupconc.TaskHandle[struct{}], n)
	for i := range hs {
		h, err := groupconc.Submit(context.Background(), e, key, fmt.Sprint(key, "-", i), func(context.Context) (struct{}, error) {
			time.Sleep(fairService) // fake clock: the task's service time
			return struct{}{}, nil
		})
		require(t, err)
		hs[i] = h
	}
	return hs
}

func require(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
