package benchmarks

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
)

// The fairness of groups of groups, on the fake clock as above: tenants
// over their users' keys ("acme/alice"), a global cap of treeCap.
const treeCap = 10

// treeWindow is how long every tenant stays backlogged in these runs.
const treeWindow = 100 * fairService

// TestFairnessTenantSpreadOverManyKeys measures the slot-time two tenants
// of equal weight get while both are backlogged. Tenant a spreads its
// backlog over 1000 users' keys, tenant b keeps it on one. With parents,
// fair share goes top-down, so each tenant gets half. Without them, every
// key is a group of its own, and b gets about 1/1001.
func TestFairnessTenantSpreadOverManyKeys(t *testing.T) {
	for _, c := range []struct {
		name    string
		parents bool
		lo, hi  float64 // tenant b's share of the slot-time
	}{
		{"tenants over users", true, 0.45, 0.55},
		{"flat keys", false, 0, 1},
	} {
		var share []float64
		synctest.Test(t, func(t *testing.T) {
			share = tenantShares(t, c.parents, map[string]int{"a": 1, "b": 1}, map[string]int{"a": 1000, "b": 1}, 3000)
		})
		t.Logf("%-18s: tenant a (1000 keys) %.4f, tenant b (1 key) %.4f of the slot-time", c.name, share[0], share[1])
		if share[1] < c.lo || share[1] > c.hi {
			t.Errorf("%s: tenant b's share %.3f, want in [%.2f, %.2f]", c.name, share[1], c.lo, c.hi)
		}
	}
}

// TestFairnessTenantWeights measures tenants weighted 3:1, each spread
// over its own number of users: they share by weight, 0.75 and 0.25. The
// cap is fairCap here: with a cap of 10 the shares settle at 7 and 3.
func TestFairnessTenantWeights(t *testing.T) {
	var share []float64
	synctest.Test(t, func(t *testing.T) {
		share = tenantShares(t, true, map[string]int{"a": 3, "b": 1}, map[string]int{"a": 10, "b": 100}, 2000)
	})
	t.Logf("weights 3:1, a over 10 users, b over 100: a %.3f, b %.3f of the slot-time", share[0], share[1])
	if share[0] < 0.72 || share[0] > 0.78 {
		t.Errorf("tenant a's share %.3f, want 0.75 ± 0.03", share[0])
	}
}

// TestFairnessUsersInsideATenant measures, as Jain's index, how evenly
// the ten users of one tenant share its slot-time while another tenant
// competes. Each user submits its whole backlog in turn.
func TestFairnessUsersInsideATenant(t *testing.T) {
	var jain float64
	var users []float64
	synctest.Test(t, func(t *testing.T) {
		e := treeExecutor(t, true, nil)
		var hs [][]*groupconc.TaskHandle[struct{}]
		for u := range 10 {
			hs = append(hs, submitN(t, e, fmt.Sprintf("a/u%d", u), 200, 0))
		}
		submitN(t, e, "b/u0", 2000, 0)
		for _, h := range hs {
			users = append(users, slotTime(h, h[0].Wait().Submitted))
		}
		require(t, e.Shutdown(context.Background()))
	})
	var sum, sq float64
	for _, x := range users {
		sum += x
		sq += x * x
	}
	jain = sum * sum / (float64(len(users)) * sq)
	t.Logf("ten users of tenant a: Jain's index %.4f; slot-seconds %.2f", jain, users)
	if jain < 0.99 {
		t.Errorf("Jain's index %.4f, want >= 0.99", jain)
	}
}

// TestFairnessLightTenantUnderASpreadBurst measures how long a light
// tenant's tasks wait to start while a heavy tenant has a burst of 100×
// the cap queued, spread over 100 users: one light task every 7ms.
func TestFairnessLightTenantUnderASpreadBurst(t *testing.T) {
	var p50, p99 time.Duration
	synctest.Test(t, func(t *testing.T) {
		e := treeExecutor(t, true, nil)
		for u := range 100 {
			submitN(t, e, fmt.Sprintf("heavy/u%d", u), treeCap, 0)
		}
		var delays []time.Duration
		for i := range 100 {
			time.Sleep(7 * time.Millisecond) // fake clock: the light tenant's arrivals
			delays = append(delays, submitN(t, e, fmt.Sprintf("light/u%d", i%3), 1, 0)[0].Wait().QueueWait())
		}
		require(t, e.Shutdown(context.Background()))
		slices.Sort(delays)
		p50, p99 = delays[len(delays)/2], delays[len(delays)*99/100-1]
	})
	t.Logf("light tenant's start delay under a spread burst: p50 %v p99 %v", p50, p99)
	if p99 > fairService {
		t.Errorf("p99 %v, want <= %v", p99, fairService)
	}
}

// treeExecutor is a fair-share executor over "tenant/user" keys, with
// tenant weights w and no limit that binds but the global cap. That is
// treeCap, or with weights fairCap, which 3:1 divides in whole permits.
func treeExecutor(t *testing.T, parents bool, w map[string]int) *groupconc.GroupExecutor {
	limit := treeCap
	if w != nil {
		limit = fairCap // divides by 3:1 in whole permits
	}
	b := groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
		GlobalMaxInFlight(limit).DefaultMaxConcurrencyPerGroup(limit)
	if parents {
		b.ParentSeparator("/")
	}
	if w != nil {
		b.PerGroupWeight(w)
	}
	return newExecutor(t, b)
}

// tenantShares runs two tenants "a" and "b" of the given weights, each
// spreading n tasks over its number of users, and returns each one's
// share of the slot-time in treeWindow.
func tenantShares(t *testing.T, parents bool, w, users map[string]int, n int) []float64 {
	e := treeExecutor(t, parents, w)
	start := time.Now()
	var slots []float64
	var all [][]*groupconc.TaskHandle[struct{}]
	for _, tn := range []string{"a", "b"} {
		var hs []*groupconc.TaskHandle[struct{}]
		for i := range n {
			hs = append(hs, submitN(t, e, fmt.Sprintf("%s/u%d", tn, i%users[tn]), 1, 0)...)
		}
		all = append(all, hs)
	}
	var total float64
	for _, hs := range all {
		s := slotTime(hs, start)
		slots = append(slots, s)
		total += s
	}
	require(t, e.Shutdown(context.Background()))
	for i := range slots {
		slots[i] /= total
	}
	return slots
}

// slotTime returns the slot-seconds hs ran within treeWindow of start.
func slotTime(hs []*groupconc.TaskHandle[struct{}], start time.Time) float64 {
	var slot time.Duration
	for _, h := range hs {
		r := h.Wait()
		if r.Status != groupconc.StatusSuccess {
			continue
		}
		from, to := max(r.Start.Sub(start), 0), min(r.End.Sub(start), treeWindow)
		slot += max(to-from, 0)
	}
	return slot.Seconds()
}
