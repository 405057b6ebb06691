package groupconc_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

func TestBuildTakesParentsAndRefusesAnEmptySeparator(t *testing.T) {
	for name, b := range map[string]*groupconc.PolicyBuilder{
		"separator": builder().ParentSeparator("/"),
		"resolver":  builder().ParentResolver(func(string) string { return "t" }),
		"both":      builder().ParentSeparator("/").ParentResolver(func(string) string { return "" }),
	} {
		_, err := b.Build()
		assert.NoError(t, err, name)
	}
	for name, b := range map[string]*groupconc.PolicyBuilder{
		"alone":         builder().ParentSeparator(""),
		"with resolver": builder().ParentResolver(func(string) string { return "" }).ParentSeparator(""),
		"resolver last": builder().ParentSeparator("").ParentResolver(func(string) string { return "" }),
	} {
		p, err := b.Build()
		assert.Nil(t, p, name)
		assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy, name)
		assert.ErrorContains(t, err, "ParentSeparator is empty", name)
	}
}

func TestBuildNamesAnEmptySeparatorAmongOtherBadSettings(t *testing.T) {
	_, err := builder().DefaultMaxConcurrencyPerGroup(0).ParentSeparator("").Build()
	require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
	assert.ErrorContains(t, err, "DefaultMaxConcurrencyPerGroup is 0")
	assert.ErrorContains(t, err, "ParentSeparator is empty")
}

func TestABuilderReusedAfterBuildKeepsItsParents(t *testing.T) {
	b := builder().ParentSeparator("/")
	p1 := mustBuild(t, b)
	p2 := mustBuild(t, b.ParentSeparator("."))
	assert.Equal(t, "a", p1.ResolveParent("a/b"), "a built policy keeps its separator")
	assert.Equal(t, "a", p2.ResolveParent("a.b"))
	assert.Empty(t, p2.ResolveParent("a/b"))
}

func TestAPolicyWithoutParentsHasNone(t *testing.T) {
	var nilPolicy *groupconc.GroupPolicy
	for name, p := range map[string]*groupconc.GroupPolicy{
		"default": groupconc.DefaultPolicy(),
		"zero":    {},
		"nil":     nilPolicy,
		"built":   mustBuild(t, builder()),
	} {
		assert.Empty(t, p.ResolveParent("a/b"), name)
		assert.Nil(t, p.Explain("a/b").Ancestors, name)
		chain, err := p.ParentChain("a/b")
		assert.NoError(t, err, name)
		assert.Nil(t, chain, name)
	}
}

// A separator makes the key say who its parent is: a user under its tenant.
func ExamplePolicyBuilder_ParentSeparator() {
	p, err := groupconc.NewPolicyBuilder().ParentSeparator("/").Build()
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", p.ResolveParent("acme/eu/alice"))
	fmt.Println(p.Explain("acme/eu/alice").Ancestors)
	fmt.Printf("%q\n", p.ResolveParent("acme"))
	// Output:
	// "acme/eu"
	// [acme/eu acme]
	// ""
}

// A resolver gives parents the keys do not name, such as a user's tenant
// from a table. A tenant itself has none.
func ExamplePolicyBuilder_ParentResolver() {
	tenants := map[string]string{"alice": "acme", "bob": "acme", "carol": "globex"}
	p, err := groupconc.NewPolicyBuilder().
		ParentResolver(func(user string) string { return tenants[user] }).
		PerGroupMaxConcurrency(map[string]int{"acme": 4}).
		Build()
	if err != nil {
		panic(err)
	}
	for _, user := range []string{"alice", "carol", "acme"} {
		e := p.Explain(user)
		fmt.Println(user, e.Ancestors)
	}
	fmt.Println("acme:", p.ResolveConcurrency("acme"))
	// Output:
	// alice [acme]
	// carol [globex]
	// acme []
	// acme: 4
}

// When both are set, the resolver alone decides, and "" from it means no
// parent.
func ExampleGroupPolicy_ResolveParent() {
	p, err := groupconc.NewPolicyBuilder().
		ParentSeparator("/").
		ParentResolver(func(key string) string {
			if tenant, _, ok := strings.Cut(key, ":"); ok {
				return tenant
			}
			return ""
		}).
		Build()
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", p.ResolveParent("acme:alice"))
	fmt.Printf("%q\n", p.ResolveParent("acme/alice"))
	fmt.Printf("%q\n", groupconc.DefaultPolicy().ResolveParent("acme/alice"))
	// Output:
	// "acme"
	// ""
	// ""
}

// 64 goroutines submit at once to fresh users of one fresh tenant: one
// state is made for the tenant, every user is its child, and the tenant's
// limit holds over all of them and is reached.
func TestRacingFirstSubmitsShareOneParent(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		for range 5 {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, builder().Isolation(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(2).
					PerGroupMaxConcurrency(map[string]int{"acme": 3}))
				start, gate := make(chan struct{}), make(chan struct{})
				var tenant gauge
				var wg sync.WaitGroup
				hs := make([]*groupconc.TaskHandle[int], 64)
				for i := range hs {
					wg.Go(func() {
						<-start
						hs[i] = submit(t, context.Background(), e, fmt.Sprintf("acme/u%d", i%8), fmt.Sprint(i), gated(gate, i, &tenant))
					})
				}
				close(start)
				wg.Wait()
				synctest.Wait()
				assert.Equal(t, 9, e.Stats().Groups, "one tenant and its 8 users")
				assert.EqualValues(t, 3, tenant.max.Load(), "the tenant's limit is reached and not exceeded")
				st, _ := e.GroupStats("acme")
				assert.Equal(t, 3, st.Running)
				assert.Equal(t, 61, st.Waiting)
				close(gate)
				quiesce(t, e, hs...)
			})
		}
	})
}

// A parent's outcome counters cover its whole subtree since it was made:
// they keep the outcomes of a child forgotten as idle, of an evicted
// child, and of that child's task that ends after the eviction.
func TestAParentKeepsTheOutcomesOfChildrenThatLeave(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().ParentSeparator("/").IdleGroupTTL(time.Second).DefaultMaxConcurrencyPerGroup(5))
		keep := newGatedTask(t, 0)
		hk := submit(t, t.Context(), e, "t/keep", "keep", keep.Fn) // keeps t remembered
		submit(t, t.Context(), e, "t/a", "a", func(context.Context) (int, error) { return 1, nil }).Wait()
		synctest.Wait()
		assert.Equal(t, uint64(1), groupStats(t, e, "t").Succeeded)
		time.Sleep(3 * time.Second) // fake clock: t/a is forgotten
		e.Stats()
		_, ok := e.GroupStats("t/a")
		require.False(t, ok, "t/a forgotten")
		assert.Equal(t, uint64(1), groupStats(t, e, "t").Succeeded, "t/a's outcome after it was forgotten")

		stubborn := make(chan struct{})
		hb := submit(t, t.Context(), e, "t/b", "b", func(context.Context) (int, error) { <-stubborn; return 1, nil })
		synctest.Wait()
		e.EvictGroup("t/b")
		close(stubborn)
		hb.Wait()
		synctest.Wait()
		assert.Equal(t, uint64(2), groupStats(t, e, "t").Succeeded, "t/b's task that ended after t/b was evicted")
		keep.Release()
		quiesce(t, e, hk)
		assert.Equal(t, uint64(3), groupStats(t, e, "t").Succeeded)
	})
}

// A child evicted while its task runs on (it ignores its context) still
// holds its parent's permit: the parent's stats count that task until it
// ends, so they say why its siblings wait.
func TestAParentCountsTheTasksOfAnEvictedChildUntilTheyEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().ParentSeparator("/").PerGroupMaxConcurrency(map[string]int{"t": 1}).DefaultMaxConcurrencyPerGroup(5))
		stubborn := make(chan struct{})
		fn := func(context.Context) (int, error) { <-stubborn; return 1, nil }
		ha := submit(t, t.Context(), e, "t/a", "a", fn)
		synctest.Wait()
		hb := submit(t, t.Context(), e, "t/b", "b", fn)
		synctest.Wait()
		e.EvictGroup("t/a")
		time.Sleep(time.Second) // fake clock: t/a's task runs on
		pos, ok := hb.Position()
		require.True(t, ok)
		assert.Equal(t, groupconc.WaitPosition{Limit: "concurrency", Group: "t"}, pos)
		st := groupStats(t, e, "t")
		assert.Equal(t, 1, st.Running, "t/a's task holds t's permit")
		assert.Equal(t, 1, st.RunningCost)
		assert.Equal(t, 1, st.Waiting)
		assert.Positive(t, st.OldestRunning)
		close(stubborn)
		quiesce(t, e, ha, hb)
		st = groupStats(t, e, "t")
		assert.Zero(t, st.Running)
		assert.Equal(t, uint64(2), st.Succeeded)
	})
}

// A tenant's RunningCost is the permits its users' running tasks hold at
// its own limit: alice's export of cost 4 holds her whole limit of 2, and
// 4 of acme's 4, so bob waits at acme's limit and the stats say why.
func TestATenantsRunningCostCountsPermitsAtItsOwnLimit(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").GlobalMaxInFlight(8).
				PerGroupMaxConcurrency(map[string]int{"acme": 4}).DefaultMaxConcurrencyPerGroup(2))
			export, b := newGatedTask(t, 1), newGatedTask(t, 2)
			he := submitGated(t, e, "acme/alice", "export", export, groupconc.SubmitOptions{Cost: 4})
			hb := submitGated(t, e, "acme/bob", "b", b, groupconc.SubmitOptions{})
			synctest.Wait()
			pos, ok := hb.Position()
			require.True(t, ok)
			assert.Equal(t, "acme", pos.Group)
			acme := groupStats(t, e, "acme")
			assert.Equal(t, 4, acme.RunningCost, "acme's limit is full")
			assert.Equal(t, 1, acme.Running)
			assert.Equal(t, 2, groupStats(t, e, "acme/alice").RunningCost, "alice's whole limit")
			export.Release()
			b.Release()
			quiesce(t, e, he, hb)
			assert.Zero(t, groupStats(t, e, "acme").RunningCost)
		})
	})
}
