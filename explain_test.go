package groupconc_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// choices is a shorthand for a stack.
func choices(kv ...any) []groupconc.LimitChoice {
	var s []groupconc.LimitChoice
	for i := 0; i < len(kv); i += 2 {
		s = append(s, groupconc.LimitChoice{Source: kv[i].(groupconc.LimitSource), Value: kv[i+1].(int)})
	}
	return s
}

const (
	builtin  = groupconc.SourceBuiltin
	dflt     = groupconc.SourceDefault
	resolver = groupconc.SourceResolver
	group    = groupconc.SourceGroup
	override = groupconc.SourceOverride
)

func TestExplainNamesTheSettingThatDecidesEachLimit(t *testing.T) {
	u := groupconc.Unlimited
	var asked atomic.Int32
	res := func(key string) int {
		asked.Add(1)
		switch key {
		case "boom":
			panic("no answer")
		case "low":
			return -3
		}
		return 5
	}
	fair := func() *groupconc.PolicyBuilder {
		return groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare)
	}
	for _, tc := range []struct {
		name                          string
		b                             *groupconc.PolicyBuilder
		key                           string
		conc, inFlight, queue, weight []groupconc.LimitChoice
	}{
		{"nothing set", groupconc.NewPolicyBuilder(), "k",
			choices(builtin, 1), choices(builtin, u), choices(builtin, u), choices(builtin, 1)},
		{"defaults set to the builtin values", groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultMaxInFlightPerGroup(u).DefaultQueueThresholdPerGroup(u), "k",
			choices(dflt, 1, builtin, 1), choices(dflt, u, builtin, u), choices(dflt, u, builtin, u), choices(builtin, 1)},
		{"maps over defaults", groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(2).PerGroupMaxConcurrency(map[string]int{"k": 4}).
			PerGroupMaxInFlight(map[string]int{"k": 9}).DefaultQueueThresholdPerGroup(0).PerGroupQueueThreshold(map[string]int{"k": 3}), "k",
			choices(group, 4, dflt, 2, builtin, 1), choices(group, 9, builtin, u), choices(group, 3, dflt, 0, builtin, u), choices(builtin, 1)},
		{"a resolver over the default", groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(2).ConcurrencyResolver(res), "k",
			choices(resolver, 5, dflt, 2, builtin, 1), choices(builtin, u), choices(builtin, u), choices(builtin, 1)},
		{"a resolver's low answer is 1", groupconc.NewPolicyBuilder().ConcurrencyResolver(res), "low",
			choices(resolver, 1, builtin, 1), choices(builtin, u), choices(builtin, u), choices(builtin, 1)},
		{"a panicking resolver gives nothing", groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(3).ConcurrencyResolver(res), "boom",
			choices(dflt, 3, builtin, 1), choices(builtin, u), choices(builtin, u), choices(builtin, 1)},
		{"a listed key does not ask the resolver", groupconc.NewPolicyBuilder().ConcurrencyResolver(res).PerGroupMaxConcurrency(map[string]int{"k": 7}), "k",
			choices(group, 7, builtin, 1), choices(builtin, u), choices(builtin, u), choices(builtin, 1)},
		{"weights", fair().DefaultWeightPerGroup(2).WeightResolver(res), "k",
			choices(builtin, 1), choices(builtin, u), choices(builtin, u), choices(resolver, 5, dflt, 2, builtin, 1)},
		{"a weight map", fair().PerGroupWeight(map[string]int{"k": 3}), "k",
			choices(builtin, 1), choices(builtin, u), choices(builtin, u), choices(group, 3, builtin, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked.Store(0)
			p := mustBuild(t, tc.b)
			x := p.Explain(tc.key)
			assert.Equal(t, tc.key, x.GroupKey)
			for _, f := range []struct {
				name string
				got  groupconc.LimitExplanation
				want []groupconc.LimitChoice
				in   int
			}{
				{"MaxConcurrency", x.MaxConcurrency, tc.conc, p.ResolveConcurrency(tc.key)},
				{"MaxInFlight", x.MaxInFlight, tc.inFlight, p.ResolveMaxInFlight(tc.key)},
				{"QueueThreshold", x.QueueThreshold, tc.queue, p.ResolveQueueThreshold(tc.key)},
				{"Weight", x.Weight, tc.weight, p.ResolveWeight(tc.key)},
			} {
				assert.Equal(t, f.want, f.got.Stack, f.name)
				assert.Equal(t, f.want[0], groupconc.LimitChoice{Source: f.got.Source, Value: f.got.Value}, f.name+": the deciding setting heads the stack")
				assert.Equal(t, f.in, f.got.Value, f.name+": the value the policy resolves")
			}
			if tc.name == "a listed key does not ask the resolver" {
				assert.Zero(t, asked.Load())
			}
		})
	}
}

func TestExplainGroupShowsTheOverrideAboveTheResolverWithoutAskingItAgain(t *testing.T) {
	var asked atomic.Int32
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(2).ConcurrencyResolver(func(string) int { return 3 + int(asked.Add(1)) }))
	submit(t, t.Context(), e, "k", "1", succeed).Wait()
	require.Equal(t, int32(1), asked.Load())
	require.NoError(t, e.SetGroupOverride("k", groupconc.GroupOverride{MaxConcurrency: ptr(9)}))
	require.Equal(t, int32(2), asked.Load(), "SetGroupOverride resolves the group again")
	x, ok := e.ExplainGroup("k")
	require.True(t, ok)
	assert.Equal(t, choices(override, 9, resolver, 5, dflt, 2, builtin, 1), x.MaxConcurrency.Stack)
	assert.Equal(t, int32(2), asked.Load(), "ExplainGroup keeps the resolver's last answer")
	assert.Equal(t, choices(resolver, 6, dflt, 2, builtin, 1), e.Policy().Explain("k").MaxConcurrency.Stack, "Policy().Explain asks it and has no override")
	_, ok = e.ExplainGroup("never-used")
	assert.False(t, ok)
}

// TestExplainGroupAgreesWithGroupStatsOnRandomPoliciesAndOverrides drives
// executors through random policies (with resolvers, some that panic or
// answer differently on every call), policy updates, overrides and
// evictions, and checks after every step that each group's explanation
// gives the limits GroupStats reports, and, where the resolvers are
// steady, what the policy's Explain with the override on top gives.
func TestExplainGroupAgreesWithGroupStatsOnRandomPoliciesAndOverrides(t *testing.T) {
	r := seededRand(t)
	for run := range 24 {
		fair := run%2 == 1
		drifting := run%4 >= 2
		t.Run(fmt.Sprintf("run%d", run), func(t *testing.T) {
			e := groupconc.New(explainPolicy(t, r, fair, drifting))
			defer e.Close()
			keys := append([]string{"x", "y"}, policyKeys...)
			for step := range 60 {
				k := keys[r.IntN(len(keys))]
				switch op := r.IntN(10); {
				case op < 4:
					submit(t, context.Background(), e, k, "t", succeed).Wait()
				case op < 7:
					o := randomOverride(r, fair)
					err := e.SetGroupOverride(k, o)
					if _, known := e.GroupStats(k); !known {
						require.ErrorIs(t, err, groupconc.ErrUnknownGroup)
					} else {
						require.NoError(t, err)
					}
				case op < 9:
					require.NoError(t, e.UpdatePolicy(explainPolicy(t, r, fair, drifting)))
				default:
					e.EvictGroup(k)
				}
				for s := range e.AllGroupStats() {
					x, ok := e.ExplainGroup(s.GroupKey)
					require.True(t, ok)
					got := []int{x.MaxConcurrency.Value, x.MaxInFlight.Value, x.QueueThreshold.Value, x.Weight.Value}
					require.Equal(t, []int{s.MaxConcurrency, s.MaxInFlight, s.QueueThreshold, s.Weight}, got, "step %d, group %q: explained, then stats", step, s.GroupKey)
					checkStacks(t, x)
					if !drifting {
						o, _ := e.GroupOverride(s.GroupKey)
						want := withOverride(e.Policy().Explain(s.GroupKey), o)
						want.Ancestors = x.Ancestors // kept from when the group was made, whatever the policy now
						require.Equal(t, want, x, "step %d, group %q", step, s.GroupKey)
						if len(x.Ancestors) > 0 {
							require.Equal(t, s.Parent, x.Ancestors[0], "step %d, group %q", step, s.GroupKey)
						} else {
							require.Empty(t, s.Parent, "step %d, group %q", step, s.GroupKey)
						}
					}
				}
			}
		})
	}
}

// explainPolicy is randomPolicy with random resolvers; drifting ones answer
// differently on every call.
func explainPolicy(t *testing.T, r *rand.Rand, fair, drifting bool) *groupconc.GroupPolicy {
	b, _ := randomPolicy(r, fair)
	b.IdleGroupTTL(0) // no group forgotten between the stats and the explanation
	var calls atomic.Int64
	salt := r.Uint32()
	res := func(key string) int {
		h := fnv.New32a()
		_, _ = h.Write([]byte(key))
		n := int((h.Sum32() ^ salt) % 7)
		if drifting {
			n += int(calls.Add(1) % 3)
		}
		if n == 0 {
			panic("no answer for " + key)
		}
		return n - 2 // some answers are below 1
	}
	if r.IntN(3) > 0 {
		b.ConcurrencyResolver(res)
	}
	if fair && r.IntN(2) == 0 {
		b.WeightResolver(res)
	}
	return mustBuild(t, b)
}

func randomOverride(r *rand.Rand, fair bool) groupconc.GroupOverride {
	pick := func(least int) *int {
		switch r.IntN(4) {
		case 0, 1:
			return nil
		case 2:
			return ptr(groupconc.Unlimited)
		}
		return ptr(least + r.IntN(6))
	}
	o := groupconc.GroupOverride{MaxConcurrency: pick(1), MaxInFlight: pick(1), QueueThreshold: pick(0)}
	if fair && r.IntN(2) == 0 {
		o.Weight = ptr(1 + r.IntN(5))
	}
	return o
}

// withOverride puts o's values on top of x's stacks.
func withOverride(x groupconc.GroupExplanation, o groupconc.GroupOverride) groupconc.GroupExplanation {
	on := func(l groupconc.LimitExplanation, v *int) groupconc.LimitExplanation {
		if v == nil {
			return l
		}
		c := groupconc.LimitChoice{Source: override, Value: *v}
		return groupconc.LimitExplanation{Value: *v, Source: override, Stack: append([]groupconc.LimitChoice{c}, l.Stack...)}
	}
	x.MaxConcurrency = on(x.MaxConcurrency, o.MaxConcurrency)
	x.MaxInFlight = on(x.MaxInFlight, o.MaxInFlight)
	x.QueueThreshold = on(x.QueueThreshold, o.QueueThreshold)
	x.Weight = on(x.Weight, o.Weight)
	return x
}

// checkStacks checks that each stack is headed by the deciding setting, in
// the order override, group, resolver, default, builtin, and ends with
// builtin.
func checkStacks(t *testing.T, x groupconc.GroupExplanation) {
	t.Helper()
	rank := map[groupconc.LimitSource]int{override: 0, group: 1, resolver: 2, dflt: 3, builtin: 4}
	for _, l := range []groupconc.LimitExplanation{x.MaxConcurrency, x.MaxInFlight, x.QueueThreshold, x.Weight} {
		require.NotEmpty(t, l.Stack)
		require.Equal(t, groupconc.LimitChoice{Source: l.Source, Value: l.Value}, l.Stack[0])
		require.Equal(t, builtin, l.Stack[len(l.Stack)-1].Source)
		for i := 1; i < len(l.Stack); i++ {
			require.Less(t, rank[l.Stack[i-1].Source], rank[l.Stack[i].Source], "%v", l.Stack)
		}
	}
}

func ptr(n int) *int { return &n }
