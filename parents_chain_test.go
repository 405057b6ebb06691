package groupconc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A chain the policy cannot resolve fails every entry point with an error
// wrapping ErrInvalidPolicy that names the chain. It makes no group, and
// accepts no task: none is counted in Submitted or told to the listener.
func TestEveryEntryPointRefusesABadChain(t *testing.T) {
	parents := map[string]string{"c": "d", "d": "c"}
	var told atomic.Int64
	l := groupconc.ListenerFuncs{Submitted: func(string, string) { told.Add(1) }}
	p := mustBuild(t, builder().TaskLifecycleListener(l).ParentSeparator("/").ParentResolver(func(k string) string {
		if k == "boom" {
			panic("no tenant")
		}
		if p, ok := parents[k]; ok {
			return p
		}
		if i := len(k) - 3; i > 0 && k[i] == '/' {
			return k[:i] // "k0/k1/…": a chain as deep as the key
		}
		return ""
	}))
	deep := deepKey(groupconc.MaxAncestors + 1)
	want := map[string]string{
		"c":    `"c" → "d" → "c"`,
		"boom": `ParentResolver panicked for "boom": "no tenant"`,
		deep:   `has more than 8 ancestors: "` + deep + `" → "` + deep[:len(deep)-3] + `"`,
	}
	e := groupconc.New(p)
	defer e.Close()
	ctx := context.Background()
	for key, w := range want {
		check := func(what string, err error) {
			t.Helper()
			assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy, "%s %s", what, key)
			assert.ErrorContains(t, err, w, "%s %s", what, key)
		}
		_, err := groupconc.Submit(ctx, e, key, "t", succeed)
		check("Submit", err)
		_, err = groupconc.SubmitWith(ctx, e, key, "t", succeed, groupconc.SubmitOptions{Block: true, Cost: 2})
		check("SubmitWith", err)
		_, err = groupconc.Do(ctx, e, key, succeed, groupconc.SubmitOptions{})
		check("Do", err)
		rs, err := groupconc.ExecuteAll(ctx, e, []groupconc.GroupTask[int]{{GroupKey: key, TaskID: "t", Task: succeed}})
		check("ExecuteAll", err)
		require.Len(t, rs, 1)
		assert.NotEqual(t, groupconc.StatusSuccess, rs[0].Status)
		_, err = groupconc.ExecuteAllWith(ctx, e, []groupconc.GroupTask[int]{{GroupKey: key, TaskID: "t", Task: succeed}}, groupconc.SubmitOptions{Block: true})
		check("ExecuteAllWith", err)
	}
	assert.Zero(t, e.Stats().Groups, "no group is made for a bad chain")
	assert.Zero(t, e.Stats().Submitted, "Submitted counts accepted tasks only")
	assert.Zero(t, told.Load(), "OnSubmitted")
	h, err := groupconc.Submit(ctx, e, deepKey(groupconc.MaxAncestors), "t", succeed)
	require.NoError(t, err, "8 ancestors are allowed")
	assert.Equal(t, groupconc.StatusSuccess, h.Wait().Status)
	assert.Equal(t, groupconc.MaxAncestors+1, e.Stats().Groups)
}

// UpdatePolicy changes limits, not parents: after a change to a resolver
// that panics, the groups made before keep their chains and take tasks,
// and only a new group is refused.
func TestAResolverThatPanicsAfterUpdatePolicyRefusesOnlyNewGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().ParentSeparator("/"))
		_, err := groupconc.Do(context.Background(), e, "a/b", succeed, groupconc.SubmitOptions{})
		require.NoError(t, err)
		require.NoError(t, e.UpdatePolicy(mustBuild(t, builder().ParentResolver(func(string) string { panic("x") }))))
		_, err = groupconc.Do(context.Background(), e, "a/b", succeed, groupconc.SubmitOptions{})
		assert.NoError(t, err)
		_, err = groupconc.Do(context.Background(), e, "a", succeed, groupconc.SubmitOptions{})
		assert.NoError(t, err)
		_, err = groupconc.Do(context.Background(), e, "a/c", succeed, groupconc.SubmitOptions{})
		assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
		st := groupStats(t, e, "a")
		assert.Equal(t, uint64(3), st.Succeeded)
		assert.Equal(t, e.Stats().Submitted, e.Stats().Succeeded)
	})
}

// A group keeps its ancestors across UpdatePolicy. So a new group whose
// parent under the new policy is a group with 8 ancestors already would
// have 9: every entry point refuses it, naming the chain, as it does a
// chain of 9 the policy gives.
func TestAParentWithKeptAncestorsCountsThemAllAfterUpdatePolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().ParentSeparator("/"))
		deep, fine := deepKey(groupconc.MaxAncestors), deepKey(groupconc.MaxAncestors-1)
		for _, k := range []string{deep, fine} {
			_, err := groupconc.Do(t.Context(), e, k, succeed, groupconc.SubmitOptions{})
			require.NoError(t, err)
		}
		require.NoError(t, e.UpdatePolicy(mustBuild(t, builder().ParentResolver(func(k string) string {
			return map[string]string{"z": deep, "y": fine}[k]
		}))))
		groups := e.Stats().Groups
		check := func(what string, err error) {
			t.Helper()
			assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy, what)
			assert.ErrorContains(t, err, `more than 8 ancestors`, what)
			assert.ErrorContains(t, err, `"z" → "`+deep+`" → "`+deep[:len(deep)-3]+`"`, what)
		}
		_, err := groupconc.Submit(t.Context(), e, "z", "t", succeed)
		check("Submit", err)
		_, err = groupconc.Do(t.Context(), e, "z", succeed, groupconc.SubmitOptions{Cost: 2})
		check("Do", err)
		rs, err := groupconc.ExecuteAllWith(t.Context(), e, []groupconc.GroupTask[int]{{GroupKey: "z", TaskID: "t", Task: succeed}}, groupconc.SubmitOptions{Block: true})
		check("ExecuteAllWith", err)
		assert.NotEqual(t, groupconc.StatusSuccess, rs[0].Status)
		assert.Equal(t, groups, e.Stats().Groups, "no group is made")

		_, err = groupconc.Do(t.Context(), e, "y", succeed, groupconc.SubmitOptions{})
		require.NoError(t, err, "8 ancestors, 7 of them kept")
		st := groupStats(t, e, "y")
		assert.Equal(t, fine, st.Parent)
		assert.Equal(t, uint64(3), groupStats(t, e, "k0").Succeeded, "the top counts its subtree's three tasks")
	})
}

// The chain above a group the executor holds is kept, not resolved again.
// So a new child of a kept group "a" has the chain "a/c" → "a", whatever
// the resolver now says of "a": a panic, a cycle back to the child, nine
// ancestors or another parent. The child is made under "a", and "a" keeps
// its place at the top.
func TestANewChildOfAKeptGroupIsNotRefusedForItsParentsFreshAnswer(t *testing.T) {
	above := map[string]func(k string) string{
		"panics":  func(string) string { panic("no parent for a") },
		"cycles":  func(string) string { return "a/c" },
		"deep":    func(k string) string { return k + "+" }, // "a+", "a++", …: no end
		"another": func(string) string { return "x" },
	}
	for name, parentOfA := range above {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, builder().ParentSeparator("/"))
				_, err := groupconc.Do(context.Background(), e, "a/b", succeed, groupconc.SubmitOptions{})
				require.NoError(t, err) // makes "a/b" under "a"
				require.NoError(t, e.UpdatePolicy(mustBuild(t, builder().ParentResolver(func(k string) string {
					switch {
					case k == "a/c":
						return "a"
					case k == "a" || k[0] == 'a' && k[len(k)-1] == '+':
						return parentOfA(k)
					}
					return ""
				}))))
				_, err = groupconc.Do(context.Background(), e, "a/c", succeed, groupconc.SubmitOptions{})
				require.NoError(t, err)
				assert.Equal(t, "a", groupStats(t, e, "a/c").Parent)
				assert.Equal(t, "", groupStats(t, e, "a").Parent)
				x, _ := e.ExplainGroup("a/c")
				assert.Equal(t, []string{"a"}, x.Ancestors)
				assert.Equal(t, 3, e.Stats().Groups, "a group made from the fresh answer")
			})
		})
	}
}
