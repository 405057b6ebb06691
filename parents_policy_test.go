package groupconc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

func TestResolveParent(t *testing.T) {
	byTable := func(m map[string]string) func(string) string {
		return func(k string) string { return m[k] }
	}
	for _, tc := range []struct {
		name     string
		sep      string // "" for none
		resolver func(string) string
		key      string
		want     string
	}{
		{"separator, three levels", "/", nil, "a/b/c", "a/b"},
		{"separator, two levels", "/", nil, "a/b", "a"},
		{"separator, top", "/", nil, "a", ""},
		{"separator first", "/", nil, "/a", ""},
		{"separator last", "/", nil, "a/", "a"},
		{"separators doubled", "/", nil, "a//b", "a/"},
		{"separator alone", "/", nil, "/", ""},
		{"multi-byte separator", "::", nil, "a::b::c", "a::b"},
		{"multi-byte separator, half of it", "::", nil, "a:b", ""},
		{"multi-byte separator first", "::", nil, "::a", ""},
		{"unicode separator", "→", nil, "a→b", "a"},
		{"resolver", "", byTable(map[string]string{"u1": "t"}), "u1", "t"},
		{"resolver, none", "", byTable(nil), "u1", ""},
		{"resolver wins over the separator", "/", byTable(map[string]string{"a/b": "x"}), "a/b", "x"},
		{"resolver's none wins over the separator", "/", byTable(nil), "a/b", ""},
		{"resolver panics", "/", func(string) string { panic("boom") }, "a/b", ""},
		{"resolver's answer as given", "", func(k string) string { return k }, "a", "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := builder()
			if tc.sep != "" {
				b.ParentSeparator(tc.sep)
			}
			if tc.resolver != nil {
				b.ParentResolver(tc.resolver)
			}
			p := mustBuild(t, b)
			assert.Equal(t, tc.want, p.ResolveParent(tc.key))
		})
	}
}

// chainPolicy builds a policy whose resolver follows the table.
func chainPolicy(t *testing.T, parents map[string]string) *groupconc.GroupPolicy {
	t.Helper()
	return mustBuild(t, builder().ParentResolver(func(k string) string { return parents[k] }))
}

// deepKey is a key with n ancestors under "/": "k0/k1/…/kn".
func deepKey(n int) string {
	parts := make([]string, n+1)
	for i := range parts {
		parts[i] = fmt.Sprintf("k%d", i)
	}
	return strings.Join(parts, "/")
}

func TestParentChainNamesEveryAncestorNearestFirst(t *testing.T) {
	p := mustBuild(t, builder().ParentSeparator("/"))
	chain, err := p.ParentChain("a/b/c")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/b", "a"}, chain)
	assert.Equal(t, chain, p.Explain("a/b/c").Ancestors)

	chain, err = p.ParentChain("a")
	require.NoError(t, err)
	assert.Nil(t, chain, "nil at the top")
}

func TestParentChainTakesEightAncestorsAndRefusesNine(t *testing.T) {
	require.Equal(t, 8, groupconc.MaxAncestors)
	p := mustBuild(t, builder().ParentSeparator("/"))

	chain, err := p.ParentChain(deepKey(groupconc.MaxAncestors))
	require.NoError(t, err, "9 levels with the group itself")
	assert.Len(t, chain, groupconc.MaxAncestors)
	assert.Equal(t, "k0", chain[len(chain)-1])

	chain, err = p.ParentChain(deepKey(groupconc.MaxAncestors + 1))
	require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
	require.ErrorIs(t, err, groupconc.ErrInvalidTask, "the key is too deep: an edge answers a bad request")
	assert.ErrorContains(t, err, `group "k0/k1/k2/k3/k4/k5/k6/k7/k8/k9" has more than 8 ancestors: "k0/k1/k2/k3/k4/k5/k6/k7/k8/k9" → "k0/k1/k2/k3/k4/k5/k6/k7/k8" → `)
	assert.ErrorContains(t, err, `→ "k0/k1" → "k0"`, "the chain up to the ninth ancestor")
	assert.NotContains(t, err.Error(), "…", "k0 has no parent: the chain ends there")

	_, err = p.ParentChain(deepKey(groupconc.MaxAncestors + 4))
	require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
	assert.ErrorContains(t, err, `→ "k0/k1/k2/k3" → …`, "the chain goes on past the ninth ancestor")
	assert.Len(t, chain, groupconc.MaxAncestors, "the ancestors resolved before the fault")
	assert.Equal(t, chain, p.Explain(deepKey(groupconc.MaxAncestors+1)).Ancestors)
}

func TestParentChainRefusesAnEndlessResolver(t *testing.T) {
	calls := 0
	p := mustBuild(t, builder().ParentResolver(func(k string) string { calls++; return k + "+" }))
	chain, err := p.ParentChain("a")
	require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
	assert.ErrorContains(t, err, `group "a" has more than 8 ancestors: "a" → "a+" → "a++" →`)
	assert.Len(t, chain, groupconc.MaxAncestors)
	assert.Equal(t, groupconc.MaxAncestors+1, calls, "the resolver is asked no more than needed")
}

func TestParentChainRefusesACycleNamingIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		parents map[string]string
		key     string
		want    string
		chain   []string
	}{
		{"two keys", map[string]string{"a": "b", "b": "a"}, "a", `group "a" has a cycle of parents: "a" → "b" → "a"`, []string{"b"}},
		{"its own parent", map[string]string{"a": "a"}, "a", `group "a" has a cycle of parents: "a" → "a"`, nil},
		{"above the group", map[string]string{"u": "a", "a": "b", "b": "c", "c": "a"}, "u", `group "u" has a cycle of parents: "u" → "a" → "b" → "c" → "a"`, []string{"a", "b", "c"}},
		{"an ancestor its own parent", map[string]string{"u": "t", "t": "t"}, "u", `group "u" has a cycle of parents: "u" → "t" → "t"`, []string{"t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := chainPolicy(t, tc.parents)
			chain, err := p.ParentChain(tc.key)
			require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
			assert.NotErrorIs(t, err, groupconc.ErrInvalidTask, "a cycle is the policy's fault")
			assert.EqualError(t, err, "groupconc: invalid policy: "+tc.want)
			assert.Equal(t, tc.chain, chain)
			assert.Equal(t, tc.chain, p.Explain(tc.key).Ancestors, "Explain stops before the key met twice")
		})
	}
}

func TestParentChainReportsAPanickingResolver(t *testing.T) {
	p := mustBuild(t, builder().ParentResolver(func(k string) string {
		if k == "t" {
			panic(fmt.Errorf("no tenant\nfor %s", k))
		}
		return map[string]string{"u": "t"}[k]
	}))
	var chain []string
	var err error
	require.NotPanics(t, func() { chain, err = p.ParentChain("u") })
	require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
	assert.EqualError(t, err, `groupconc: invalid policy: group "u": ParentResolver panicked for "t": "no tenant\nfor t" (chain "u" → "t")`)
	assert.Equal(t, []string{"t"}, chain)
	assert.Equal(t, "t", p.ResolveParent("u"))
	assert.Empty(t, p.ResolveParent("t"), "ResolveParent gives none for a panic")
	assert.Equal(t, []string{"t"}, p.Explain("u").Ancestors)

	p = mustBuild(t, builder().ParentResolver(func(string) string { panic(nil) }))
	_, err = p.ParentChain("u")
	assert.ErrorContains(t, err, `group "u": ParentResolver panicked for "u": `, "panic(nil) is a panic too")
}

func TestParentChainCutsALongKeyInItsError(t *testing.T) {
	long := strings.Repeat("x", 1<<16)
	p := chainPolicy(t, map[string]string{long: long})
	_, err := p.ParentChain(long)
	require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
	assert.Less(t, len(err.Error()), 1024, "the key is cut")
	assert.Contains(t, err.Error(), "(65536 bytes)")
}

func TestParentSeparatorRoundTripsThroughJSON(t *testing.T) {
	for _, sep := range []string{"/", "::", "→", `"`, "\n"} {
		p := mustBuild(t, builder().ParentSeparator(sep))
		data, err := json.Marshal(p)
		require.NoError(t, err)
		want, _ := json.Marshal(sep)
		assert.Contains(t, string(data), `"parentSeparator":`+string(want))
		b, err := groupconc.ParsePolicy(data)
		require.NoError(t, err, "ParsePolicy of %s", data)
		q := mustBuild(t, b)
		again, err := json.Marshal(q)
		require.NoError(t, err)
		assert.Equal(t, string(data), string(again))
		key := "a" + sep + "b"
		assert.Equal(t, "a", q.ResolveParent(key), "separator %q", sep)
	}
}

func TestMarshalJSONWritesNoParentSeparatorUnlessSet(t *testing.T) {
	data, err := json.Marshal(mustBuild(t, builder().ParentResolver(func(string) string { return "t" })))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "parent", "a resolver has no JSON form")

	data, err = json.Marshal(mustBuild(t, builder().ParentSeparator("/").ParentResolver(func(string) string { return "t" })))
	require.NoError(t, err)
	assert.Contains(t, string(data), `"parentSeparator":"/"`, "the separator is written, the resolver left out")
}

func TestMarshalJSONNamesASeparatorThatIsNotUTF8(t *testing.T) {
	_, err := json.Marshal(mustBuild(t, builder().ParentSeparator("\xff")))
	require.Error(t, err)
	assert.ErrorContains(t, err, `parentSeparator "\xff" is not valid UTF-8`)
}

func TestParsePolicyReadsParentSeparator(t *testing.T) {
	b, err := groupconc.ParsePolicy([]byte(`{"parentSeparator": ""}`))
	require.ErrorIs(t, err, groupconc.ErrInvalidPolicy, "a bad value, as strict reading has it")
	assert.ErrorContains(t, err, `parentSeparator: empty, want a separator such as "/"`)
	_, err = b.Build()
	require.ErrorIs(t, err, groupconc.ErrInvalidPolicy, "the nil builder ParsePolicy returns with its error")

	b, err = groupconc.ParsePolicy([]byte(`{"parentSeparator": "/"}`))
	require.NoError(t, err)
	p := mustBuild(t, b.ParentResolver(func(string) string { return "r" }))
	assert.Equal(t, "r", p.ResolveParent("a/b"), "a resolver added to a parsed policy decides")

	for _, tc := range []struct{ doc, want string }{
		{`{"parentSeparator": 1}`, `parentSeparator: 1 is not a string`},
		{`{"parentSeparator": null}`, `parentSeparator: null is not a string`},
		{`{"parentSeparator": ["/"]}`, `parentSeparator: an array is not a string`},
		{`{"parentSeparator": "/", "parentSeparator": "."}`, `parentSeparator: given twice`},
	} {
		_, err := groupconc.ParsePolicy([]byte(tc.doc))
		require.ErrorIs(t, err, groupconc.ErrInvalidPolicy, tc.doc)
		assert.ErrorContains(t, err, tc.want, tc.doc)
	}
}

func TestExplainGroupGivesTheAncestors(t *testing.T) {
	e := groupconc.New(mustBuild(t, builder().ParentSeparator("/")))
	defer e.Close()
	h, err := groupconc.Submit(context.Background(), e, "acme/eu/alice", "t1", func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, err)
	_, err = h.Await(context.Background())
	require.NoError(t, err)
	x, ok := e.ExplainGroup("acme/eu/alice")
	require.True(t, ok)
	assert.Equal(t, []string{"acme/eu", "acme"}, x.Ancestors)
}

// A key one level deeper than a group already made is refused. The error
// speaks of that group's ancestors, not of a change of policy: there was
// none.
func TestAKeyBelowTheDeepestGroupMadeIsRefusedNamingItsChain(t *testing.T) {
	e := groupconc.New(mustBuild(t, builder().ParentSeparator("/")))
	defer e.Close()
	ok := func(context.Context) (int, error) { return 0, nil }
	_, err := groupconc.Do(t.Context(), e, deepKey(groupconc.MaxAncestors), ok, groupconc.SubmitOptions{})
	require.NoError(t, err)
	_, err = groupconc.Do(t.Context(), e, deepKey(groupconc.MaxAncestors+1), ok, groupconc.SubmitOptions{})
	require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
	assert.ErrorContains(t, err, `group "k0/k1/k2/k3/k4/k5/k6/k7/k8/k9" has more than 8 ancestors`)
	assert.NotContains(t, err.Error(), "earlier policy")
}
