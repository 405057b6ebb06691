package groupconc_test

// Policy building, validation and resolution.

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/kobe/groupconc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildRejectsEachBadFieldByName(t *testing.T) {
	cases := []struct {
		field string
		set   func(b *groupconc.PolicyBuilder)
	}{
		{"PerGroupMaxConcurrency", func(b *groupconc.PolicyBuilder) { b.PerGroupMaxConcurrency(map[string]int{"a": 2, "b": 0}) }},
		{"PerGroupMaxConcurrency", func(b *groupconc.PolicyBuilder) { b.PerGroupMaxConcurrency(map[string]int{"a": -1}) }},
		{"DefaultMaxConcurrencyPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultMaxConcurrencyPerGroup(0) }},
		{"DefaultMaxConcurrencyPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultMaxConcurrencyPerGroup(-3) }},
		{"GlobalMaxInFlight", func(b *groupconc.PolicyBuilder) { b.GlobalMaxInFlight(0) }},
		{"GlobalMaxInFlight", func(b *groupconc.PolicyBuilder) { b.GlobalMaxInFlight(-1) }},
		{"DefaultMaxInFlightPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultMaxInFlightPerGroup(0) }},
		{"PerGroupMaxInFlight", func(b *groupconc.PolicyBuilder) { b.PerGroupMaxInFlight(map[string]int{"a": 0}) }},
		{"GlobalQueueThreshold", func(b *groupconc.PolicyBuilder) { b.GlobalQueueThreshold(-1) }},
		{"DefaultQueueThresholdPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultQueueThresholdPerGroup(-1) }},
		{"PerGroupQueueThreshold", func(b *groupconc.PolicyBuilder) { b.PerGroupQueueThreshold(map[string]int{"a": 0, "b": -2}) }},
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			b := groupconc.NewPolicyBuilder()
			c.set(b)
			p, err := b.Build()
			assert.Nil(t, p)
			require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
			assert.Regexp(t, `\b`+c.field+`\b`, err.Error(), "error should name the bad field")
			for _, other := range cases {
				if other.field != c.field {
					assert.NotRegexp(t, `\b`+other.field+`\b`, err.Error(), "error names a field that is fine")
				}
			}
		})
	}
}

func TestBuildNamesEveryBadFieldInOneError(t *testing.T) {
	_, err := groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(map[string]int{"a": 0}).
		DefaultMaxConcurrencyPerGroup(0).
		GlobalMaxInFlight(0).
		DefaultMaxInFlightPerGroup(0).
		PerGroupMaxInFlight(map[string]int{"a": 0}).
		GlobalQueueThreshold(-1).
		DefaultQueueThresholdPerGroup(-1).
		PerGroupQueueThreshold(map[string]int{"a": -1}).
		Build()
	require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
	for _, field := range []string{
		"PerGroupMaxConcurrency", "DefaultMaxConcurrencyPerGroup", "GlobalMaxInFlight",
		"DefaultMaxInFlightPerGroup", "PerGroupMaxInFlight", "GlobalQueueThreshold",
		"DefaultQueueThresholdPerGroup", "PerGroupQueueThreshold",
	} {
		assert.Regexp(t, `\b`+field+`\b`, err.Error())
	}
}

func TestBuildAcceptsTheSmallestValidValues(t *testing.T) {
	p, err := groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(map[string]int{"a": 1}).
		DefaultMaxConcurrencyPerGroup(1).
		GlobalMaxInFlight(1).
		DefaultMaxInFlightPerGroup(1).
		PerGroupMaxInFlight(map[string]int{"a": 1}).
		GlobalQueueThreshold(0).
		DefaultQueueThresholdPerGroup(0).
		PerGroupQueueThreshold(map[string]int{"a": 0}).
		Build()
	require.NoError(t, err)
	assert.Equal(t, 1, p.ResolveConcurrency("a"))
	assert.Equal(t, 1, p.ResolveMaxInFlight("a"))
	assert.Equal(t, 0, p.ResolveQueueThreshold("a"))
	assert.Equal(t, 1, p.GlobalMaxInFlight())
	assert.Equal(t, 0, p.GlobalQueueThreshold())
}

func TestPolicyKeepsItsOwnCopiesOfTheMaps(t *testing.T) {
	conc := map[string]int{"a": 2}
	inFlight := map[string]int{"a": 3}
	queue := map[string]int{"a": 4}
	b := groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(conc).PerGroupMaxInFlight(inFlight).PerGroupQueueThreshold(queue)
	// Changed after the setters: the builder must not see it.
	conc["a"], conc["b"] = 20, 0
	inFlight["a"], inFlight["b"] = 30, 0
	queue["a"], queue["b"] = 40, -1
	p, err := b.Build()
	require.NoError(t, err, "builder saw changes made to the maps after the setters")
	// Changed after Build: the policy must not see it.
	conc["a"], inFlight["a"], queue["a"] = 200, 300, 400
	conc["c"], inFlight["c"], queue["c"] = 5, 6, 7

	assert.Equal(t, 2, p.ResolveConcurrency("a"))
	assert.Equal(t, 3, p.ResolveMaxInFlight("a"))
	assert.Equal(t, 4, p.ResolveQueueThreshold("a"))
	assert.Equal(t, 1, p.ResolveConcurrency("c"), "default for a key added to the map later")
	assert.Equal(t, groupconc.Unlimited, p.ResolveMaxInFlight("c"))
	assert.Equal(t, groupconc.Unlimited, p.ResolveQueueThreshold("c"))

	// Reusing the builder after Build does not change the built policy.
	_, err = b.PerGroupMaxConcurrency(map[string]int{"a": 9}).Build()
	require.NoError(t, err)
	assert.Equal(t, 2, p.ResolveConcurrency("a"), "built policy changed by a later setter")
}

func TestResolveConcurrencyGoesMapThenResolverThenDefault(t *testing.T) {
	resolver := func(key string) int {
		switch key {
		case "panics":
			panic("resolver failed")
		case "zero":
			return 0
		case "negative":
			return -5
		}
		return 7
	}
	withAll := func() *groupconc.PolicyBuilder {
		return groupconc.NewPolicyBuilder().
			PerGroupMaxConcurrency(map[string]int{"mapped": 3, "panics": 2}).
			ConcurrencyResolver(resolver).
			DefaultMaxConcurrencyPerGroup(4)
	}
	cases := []struct {
		name    string
		builder *groupconc.PolicyBuilder
		key     string
		want    int
	}{
		{"map wins over resolver", withAll(), "mapped", 3},
		{"map wins over a resolver that would panic", withAll(), "panics", 2},
		{"resolver for an unmapped key", withAll(), "other", 7},
		{"resolver panic falls back to the default", groupconc.NewPolicyBuilder().ConcurrencyResolver(resolver).DefaultMaxConcurrencyPerGroup(4), "panics", 4},
		{"resolver panic falls back to 1 without a default", groupconc.NewPolicyBuilder().ConcurrencyResolver(resolver), "panics", 1},
		{"resolver 0 becomes 1", withAll(), "zero", 1},
		{"resolver negative becomes 1", withAll(), "negative", 1},
		{"default without resolver", groupconc.NewPolicyBuilder().PerGroupMaxConcurrency(map[string]int{"mapped": 3}).DefaultMaxConcurrencyPerGroup(4), "other", 4},
		{"map without resolver", groupconc.NewPolicyBuilder().PerGroupMaxConcurrency(map[string]int{"mapped": 3}).DefaultMaxConcurrencyPerGroup(4), "mapped", 3},
		{"1 with nothing set", groupconc.NewPolicyBuilder(), "other", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustBuild(t, c.builder)
			assert.Equal(t, c.want, p.ResolveConcurrency(c.key))
		})
	}
}

func TestResolveMaxInFlightAndQueueThresholdGoMapThenDefault(t *testing.T) {
	cases := []struct {
		name                   string
		builder                *groupconc.PolicyBuilder
		key                    string
		wantInFlight, wantQueu int
	}{
		{"nothing set", groupconc.NewPolicyBuilder(), "a", groupconc.Unlimited, groupconc.Unlimited},
		{"defaults", groupconc.NewPolicyBuilder().DefaultMaxInFlightPerGroup(5).DefaultQueueThresholdPerGroup(6), "a", 5, 6},
		{"map over defaults", groupconc.NewPolicyBuilder().
			DefaultMaxInFlightPerGroup(5).DefaultQueueThresholdPerGroup(6).
			PerGroupMaxInFlight(map[string]int{"a": 2}).PerGroupQueueThreshold(map[string]int{"a": 0}), "a", 2, 0},
		{"unmapped key gets defaults", groupconc.NewPolicyBuilder().
			DefaultMaxInFlightPerGroup(5).DefaultQueueThresholdPerGroup(6).
			PerGroupMaxInFlight(map[string]int{"a": 2}).PerGroupQueueThreshold(map[string]int{"a": 0}), "b", 5, 6},
		{"map without defaults", groupconc.NewPolicyBuilder().
			PerGroupMaxInFlight(map[string]int{"a": 2}).PerGroupQueueThreshold(map[string]int{"a": 1}), "a", 2, 1},
		{"resolver does not apply", groupconc.NewPolicyBuilder().
			ConcurrencyResolver(func(string) int { return 9 }), "a", groupconc.Unlimited, groupconc.Unlimited},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustBuild(t, c.builder)
			assert.Equal(t, c.wantInFlight, p.ResolveMaxInFlight(c.key), "ResolveMaxInFlight")
			assert.Equal(t, c.wantQueu, p.ResolveQueueThreshold(c.key), "ResolveQueueThreshold")
		})
	}
}

func TestDefaultPolicyValues(t *testing.T) {
	p := groupconc.DefaultPolicy()
	require.NotNil(t, p)
	assert.Equal(t, 1, p.ResolveConcurrency("any"), "ResolveConcurrency")
	assert.Equal(t, groupconc.Unlimited, p.ResolveMaxInFlight("any"), "ResolveMaxInFlight")
	assert.Equal(t, groupconc.Unlimited, p.ResolveQueueThreshold("any"), "ResolveQueueThreshold")
	assert.Equal(t, groupconc.Unlimited, p.GlobalMaxInFlight(), "GlobalMaxInFlight")
	assert.Equal(t, groupconc.Unlimited, p.GlobalQueueThreshold(), "GlobalQueueThreshold")
}

func TestZeroAndNilPolicyBehaveAsTheDefault(t *testing.T) {
	built, err := groupconc.NewPolicyBuilder().Build()
	require.NoError(t, err)
	zeroBuilt, err := new(groupconc.PolicyBuilder).Build()
	require.NoError(t, err)
	policies := []struct {
		name string
		p    *groupconc.GroupPolicy
	}{
		{"nil", nil},
		{"zero GroupPolicy", &groupconc.GroupPolicy{}},
		{"DefaultPolicy", groupconc.DefaultPolicy()},
		{"empty builder", built},
		{"zero PolicyBuilder", zeroBuilt},
	}
	for _, pc := range policies {
		t.Run(pc.name, func(t *testing.T) {
			p := pc.p
			assert.Equal(t, 1, p.ResolveConcurrency("g"), "ResolveConcurrency")
			assert.Equal(t, groupconc.Unlimited, p.ResolveMaxInFlight("g"), "ResolveMaxInFlight")
			assert.Equal(t, groupconc.Unlimited, p.ResolveQueueThreshold("g"), "ResolveQueueThreshold")
			assert.Equal(t, groupconc.Unlimited, p.GlobalMaxInFlight(), "GlobalMaxInFlight")
			assert.Equal(t, groupconc.Unlimited, p.GlobalQueueThreshold(), "GlobalQueueThreshold")
			assert.Equal(t, 1, p.ResolveWeight("g"), "ResolveWeight")
			assert.Equal(t, groupconc.IsolationOff, p.Isolation(), "Isolation")
			assert.Zero(t, p.IdleGroupTTL(), "IdleGroupTTL")
			assert.Empty(t, p.ResolveParent("g/h"), "ResolveParent")
			assert.Equal(t, groupconc.DefaultPolicy().Explain("g"), p.Explain("g"), "Explain")

			synctest.Test(t, func(t *testing.T) {
				e := groupconc.New(p)
				defer e.Close()
				gate := make(chan struct{})
				var g gauge
				var hs []*groupconc.TaskHandle[int]
				for i := range 3 {
					hs = append(hs, submit(t, t.Context(), e, "g", fmt.Sprint(i), gated(gate, i, &g)))
				}
				synctest.Wait()
				assert.EqualValues(t, 1, g.cur.Load(), "tasks of one group running at once")
				gs, ok := e.GroupStats("g")
				require.True(t, ok)
				assert.Equal(t, groupconc.GroupStats{
					GroupKey: "g", Running: 1, Waiting: 2, InFlight: 3, RunningCost: 1, // no bulkhead: all are past it
					MaxConcurrency: 1, MaxInFlight: groupconc.Unlimited, QueueThreshold: groupconc.Unlimited, Weight: 1,
				}, gs)
				assert.Equal(t, groupconc.Unlimited, e.Stats().GlobalMaxInFlight)
				openGate(t, gate, hs, "gated")
				assert.EqualValues(t, 1, g.max.Load())
			})
		})
	}
}

// Bad limits fail at Build, each naming its field, wrapping
// ErrInvalidPolicy; extreme valid values build; a zero queue threshold means
// "never wait" and finishes without blocking; a per-group limit above the
// global cap is bounded by it.
func TestBadLimitsAreRejectedAtBuild(t *testing.T) {
	bad := []struct {
		field string
		set   func(*groupconc.PolicyBuilder)
	}{
		{"DefaultMaxConcurrencyPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultMaxConcurrencyPerGroup(0) }},
		{"DefaultMaxConcurrencyPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultMaxConcurrencyPerGroup(-1) }},
		{"GlobalMaxInFlight", func(b *groupconc.PolicyBuilder) { b.GlobalMaxInFlight(0) }},
		{"GlobalMaxInFlight", func(b *groupconc.PolicyBuilder) { b.GlobalMaxInFlight(-5) }},
		{"DefaultMaxInFlightPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultMaxInFlightPerGroup(0) }},
		{"GlobalQueueThreshold", func(b *groupconc.PolicyBuilder) { b.GlobalQueueThreshold(-1) }},
		{"DefaultQueueThresholdPerGroup", func(b *groupconc.PolicyBuilder) { b.DefaultQueueThresholdPerGroup(-1) }},
		{"PerGroupMaxConcurrency", func(b *groupconc.PolicyBuilder) { b.PerGroupMaxConcurrency(map[string]int{"a": 0}) }},
		{"PerGroupMaxInFlight", func(b *groupconc.PolicyBuilder) { b.PerGroupMaxInFlight(map[string]int{"a": -1}) }},
		{"PerGroupQueueThreshold", func(b *groupconc.PolicyBuilder) { b.PerGroupQueueThreshold(map[string]int{"a": -1}) }},
		{"PerGroupMaxConcurrency", func(b *groupconc.PolicyBuilder) { b.PerGroupMaxConcurrency(map[string]int{"": 1}) }},
		{"GlobalMaxInFlight", func(b *groupconc.PolicyBuilder) { b.GlobalMaxInFlight(-1 << 63) }},
		{"RejectionPolicy", func(b *groupconc.PolicyBuilder) { b.RejectionPolicy(groupconc.RejectionPolicy(7)) }},
	}
	for _, c := range bad {
		b := builder()
		c.set(b)
		var p *groupconc.GroupPolicy
		var err error
		require.NotPanics(t, func() { p, err = b.Build() })
		assert.Nil(t, p)
		assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
		if err != nil {
			assert.Contains(t, err.Error(), c.field)
		}
	}
	// Two bad fields: one error naming both.
	_, err := builder().GlobalMaxInFlight(0).DefaultQueueThresholdPerGroup(-1).Build()
	require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
	assert.Contains(t, err.Error(), "GlobalMaxInFlight")
	assert.Contains(t, err.Error(), "DefaultQueueThresholdPerGroup")

	// Extreme but valid.
	p, err := builder().GlobalMaxInFlight(groupconc.Unlimited - 1).DefaultMaxConcurrencyPerGroup(groupconc.Unlimited).
		DefaultMaxInFlightPerGroup(1).GlobalQueueThreshold(0).DefaultQueueThresholdPerGroup(groupconc.Unlimited).Build()
	require.NoError(t, err)
	assert.Equal(t, groupconc.Unlimited-1, p.GlobalMaxInFlight())
	// The zero-value and nil policies are the default one.
	var zero groupconc.GroupPolicy
	var nilPolicy *groupconc.GroupPolicy
	for _, q := range []*groupconc.GroupPolicy{&zero, nilPolicy} {
		assert.Equal(t, 1, q.ResolveConcurrency("x"))
		assert.Equal(t, groupconc.Unlimited, q.ResolveMaxInFlight("x"))
		assert.Equal(t, groupconc.Unlimited, q.ResolveQueueThreshold("x"))
	}
}
