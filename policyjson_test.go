package groupconc_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

var policySeed = flag.Uint64("policyseed", 0, "seed of the random policies of the policy-as-data tests; 0 picks one")

// seededRand returns a generator for a test, with its seed logged so a
// failure can be run again with -policyseed.
func seededRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := *policySeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (run again with -policyseed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

func TestParsePolicyRefusesEveryBadFieldNamingItsJSONPath(t *testing.T) {
	for _, tc := range []struct {
		name string
		json string
		want []string // each a part of the error
	}{
		{"unknown field", `{"maxConcurency": 2}`, []string{`maxConcurency: unknown field`}},
		{"unknown pressure field", `{"pressure": {"backlogCont": 1}}`, []string{`pressure.backlogCont: unknown field`}},
		{"concurrency below 1", `{"perGroupMaxConcurrency": {"a": -1}}`, []string{`perGroupMaxConcurrency["a"]: -1 is below 1`}},
		{"default concurrency 0", `{"defaultMaxConcurrencyPerGroup": 0}`, []string{`defaultMaxConcurrencyPerGroup: 0 is below 1`}},
		{"global in-flight 0", `{"globalMaxInFlight": 0}`, []string{`globalMaxInFlight: 0 is below 1`}},
		{"global threshold -1", `{"globalQueueThreshold": -1}`, []string{`globalQueueThreshold: -1 is below 0`}},
		{"in-flight 0", `{"perGroupMaxInFlight": {"a": 0}}`, []string{`perGroupMaxInFlight["a"]: 0 is below 1`}},
		{"default in-flight 0", `{"defaultMaxInFlightPerGroup": 0}`, []string{`defaultMaxInFlightPerGroup: 0 is below 1`}},
		{"threshold -1", `{"perGroupQueueThreshold": {"a b": -1}}`, []string{`perGroupQueueThreshold["a b"]: -1 is below 0`}},
		{"default threshold -1", `{"defaultQueueThresholdPerGroup": -1}`, []string{`defaultQueueThresholdPerGroup: -1 is below 0`}},
		{"weight 0", `{"isolation": "fair-share", "perGroupWeight": {"a": 0}}`, []string{`perGroupWeight["a"]: 0 is below 1`}},
		{"default weight 0", `{"isolation": "fair-share", "defaultWeightPerGroup": 0}`, []string{`defaultWeightPerGroup: 0 is below 1`}},
		{"unlimited weight", `{"isolation": "fair-share", "defaultWeightPerGroup": "unlimited"}`, []string{`defaultWeightPerGroup: "unlimited" is not a whole number`}},
		{"weights without fair share", `{"perGroupWeight": {"a": 2}, "defaultWeightPerGroup": 2}`,
			[]string{`perGroupWeight: weights need "isolation": "fair-share"`, `defaultWeightPerGroup: weights need`}},
		{"weights under off", `{"isolation": "off", "defaultWeightPerGroup": 2}`, []string{`defaultWeightPerGroup: weights need`}},
		{"global threshold under fair share", `{"globalQueueThreshold": 5, "isolation": "fair-share"}`, []string{`globalQueueThreshold: 5 under "isolation": "fair-share"`}},
		{"a word for a limit", `{"globalMaxInFlight": "lots"}`, []string{`globalMaxInFlight: "lots" is not a whole number or "unlimited"`}},
		{"a fraction", `{"perGroupMaxConcurrency": {"a": 1.5}}`, []string{`perGroupMaxConcurrency["a"]: 1.5 is not a whole number`}},
		{"an exponent", `{"globalMaxInFlight": 1e3}`, []string{`globalMaxInFlight: 1e3 is not a whole number`}},
		{"out of range", `{"globalMaxInFlight": 99999999999999999999}`, []string{`globalMaxInFlight: 99999999999999999999 is out of range`}},
		{"null", `{"globalMaxInFlight": null}`, []string{`globalMaxInFlight: null is not a whole number`}},
		{"true", `{"defaultMaxConcurrencyPerGroup": true}`, []string{`defaultMaxConcurrencyPerGroup: true is not a whole number`}},
		{"an object for a limit", `{"globalMaxInFlight": {"n": [1, 2]}, "globalQueueThreshold": -2}`,
			[]string{`globalMaxInFlight: an object is not`, `globalQueueThreshold: -2 is below 0`}},
		{"Unlimited spelt otherwise", `{"globalMaxInFlight": "Unlimited"}`, []string{`globalMaxInFlight: "Unlimited" is not`}},
		{"empty group key", `{"perGroupMaxConcurrency": {"": 2}}`, []string{`perGroupMaxConcurrency[""]: empty group key`}},
		{"map not an object", `{"perGroupMaxInFlight": [1]}`, []string{`perGroupMaxInFlight: an array is not an object of group keys`}},
		{"map value bad", `{"perGroupQueueThreshold": {"a": "x", "b": 1}}`, []string{`perGroupQueueThreshold["a"]: "x" is not`}},
		{"rejection policy", `{"rejectionPolicy": "drop"}`, []string{`rejectionPolicy: "drop" is not one of "abort", "discard", "callerRuns" or "discardOldest"`}},
		{"rejection policy by Go name", `{"rejectionPolicy": "RejectAbort"}`, []string{`rejectionPolicy: "RejectAbort" is not one of`}},
		{"rejection policy number", `{"rejectionPolicy": 1}`, []string{`rejectionPolicy: 1 is not one of`}},
		{"isolation", `{"isolation": "fair"}`, []string{`isolation: "fair" is not one of "off" or "fair-share"`}},
		{"duration word", `{"idleGroupTTL": "ninety"}`, []string{`idleGroupTTL: "ninety" is not a Go duration`}},
		{"duration number", `{"idleGroupTTL": 90}`, []string{`idleGroupTTL: 90 is not a Go duration string`}},
		{"negative duration", `{"idleGroupTTL": "-1s"}`, []string{`idleGroupTTL: "-1s" is below 0`}},
		{"backlog count", `{"pressure": {"backlogCount": -1}}`, []string{`pressure.backlogCount: -1 is below 0`}},
		{"backlog age", `{"pressure": {"backlogAge": "-5s"}}`, []string{`pressure.backlogAge: "-5s" is below 0`}},
		{"cooldown", `{"pressure": {"cooldown": 30}}`, []string{`pressure.cooldown: 30 is not a Go duration string`}},
		{"pressure not an object", `{"pressure": "on"}`, []string{`pressure: "on" is not an object`}},
		{"field twice", `{"globalMaxInFlight": 2, "globalMaxInFlight": 3}`, []string{`globalMaxInFlight: given twice`}},
		{"group key twice", `{"perGroupMaxConcurrency": {"a": 2, "a": 3}}`, []string{`perGroupMaxConcurrency["a"]: given twice`}},
		{"pressure field twice", `{"pressure": {"cooldown": "1s", "cooldown": "2s"}}`, []string{`pressure.cooldown: given twice`}},
		{"bad values after a field twice", `{"globalMaxInFlight": 2, "globalMaxInFlight": 3, "globalQueueThreshold": -1, "perGroupMaxConcurrency": {"a": 0}}`,
			[]string{`globalMaxInFlight: given twice`, `globalQueueThreshold: -1 is below 0`, `perGroupMaxConcurrency["a"]: 0 is below 1`}},
		{"an unknown field's object skipped", `{"typo": {"x": [1, {"y": 2}]}, "globalMaxInFlight": 0}`,
			[]string{`typo: unknown field`, `globalMaxInFlight: 0 is below 1`}},
		{"a field twice cut short", `{"globalMaxInFlight": 2, "globalMaxInFlight": `, []string{`skipped value: the JSON ends early`}},
		{"a bad group key's value given twice", `{"perGroupMaxConcurrency": {"a": 0, "a": 2}}`,
			[]string{`perGroupMaxConcurrency["a"]: 0 is below 1`, `perGroupMaxConcurrency["a"]: given twice`}},
		{"a second object", `{} {}`, []string{`data after the policy object`}},
		{"trailing garbage", `{"globalMaxInFlight": 2} x`, []string{`data after the policy object`}},
		{"trailing garbage after bad values", `{"defaultMaxConcurrencyPerGroup": 0, "perGroupMaxConcurrency": {"a": -1}} x`,
			[]string{`data after the policy object`, `defaultMaxConcurrencyPerGroup: 0 is below 1`, `perGroupMaxConcurrency["a"]: -1 is below 1`}},
		{"a syntax error after a bad value", `{"globalMaxInFlight": 0, "idleGroupTTL" 2}`, []string{`JSON syntax error at byte`, `globalMaxInFlight: 0 is below 1`}},
		{"an array", `[]`, []string{`policy: an array is not an object`}},
		{"null policy", `null`, []string{`policy: null is not an object`}},
		{"empty", ``, []string{`policy: the JSON ends early`}},
		{"cut short", `{"perGroupMaxConcurrency": {"a": 2`, []string{`perGroupMaxConcurrency: the JSON ends early`}},
		{"syntax", `{"globalMaxInFlight" 2}`, []string{`JSON syntax error at byte`}},
		{"every bad field at once", `{"globalMaxInFlight": 0, "perGroupMaxConcurrency": {"a": 0, "b": 2}, "idleGroupTTL": "x", "typo": 1}`,
			[]string{`globalMaxInFlight: 0 is below 1`, `perGroupMaxConcurrency["a"]: 0 is below 1`, `idleGroupTTL: "x"`, `typo: unknown field`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := groupconc.ParsePolicy([]byte(tc.json))
			require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
			assert.Nil(t, b)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "perGroupMaxConcurrency[\"b\"]", "a good entry is not named")
		})
	}
}

func TestParsePolicyReadsEveryField(t *testing.T) {
	b, err := groupconc.ParsePolicy([]byte(`{
		"globalMaxInFlight": 64, "globalQueueThreshold": "unlimited",
		"defaultMaxConcurrencyPerGroup": 2, "perGroupMaxConcurrency": {"premium": 8, "open": "unlimited"},
		"defaultMaxInFlightPerGroup": 16, "perGroupMaxInFlight": {"premium": "unlimited"},
		"defaultQueueThresholdPerGroup": 0, "perGroupQueueThreshold": {"batch": 1000},
		"rejectionPolicy": "discardOldest", "isolation": "fair-share",
		"defaultWeightPerGroup": 2, "perGroupWeight": {"premium": 4},
		"idleGroupTTL": "1m30s",
		"pressure": {"backlogCount": 10, "backlogAge": "2s", "cooldown": "1m"}
	}`))
	require.NoError(t, err)
	p := mustBuild(t, b)
	assert.Equal(t, 64, p.GlobalMaxInFlight())
	assert.Equal(t, groupconc.Unlimited, p.GlobalQueueThreshold())
	assert.Equal(t, []int{8, groupconc.Unlimited, 2}, []int{p.ResolveConcurrency("premium"), p.ResolveConcurrency("open"), p.ResolveConcurrency("x")})
	assert.Equal(t, []int{groupconc.Unlimited, 16}, []int{p.ResolveMaxInFlight("premium"), p.ResolveMaxInFlight("x")})
	assert.Equal(t, []int{1000, 0}, []int{p.ResolveQueueThreshold("batch"), p.ResolveQueueThreshold("x")})
	assert.Equal(t, []int{4, 2}, []int{p.ResolveWeight("premium"), p.ResolveWeight("x")})
	assert.Equal(t, groupconc.IsolationFairShare, p.Isolation())
	assert.Equal(t, 90*time.Second, p.IdleGroupTTL())
	out, err := json.Marshal(p)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"rejectionPolicy":"discardOldest"`)
	assert.Contains(t, string(out), `"pressure":{"backlogCount":10,"backlogAge":"2s","cooldown":"1m0s"}`)
}

func TestParsePolicyOfNothingIsTheDefaultPolicy(t *testing.T) {
	b, err := groupconc.ParsePolicy([]byte(" {}\n"))
	require.NoError(t, err)
	got, err := json.Marshal(mustBuild(t, b))
	require.NoError(t, err)
	want, err := json.Marshal(groupconc.DefaultPolicy())
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))
	assert.JSONEq(t, `{"globalMaxInFlight":"unlimited","globalQueueThreshold":"unlimited","rejectionPolicy":"abort","isolation":"off","idleGroupTTL":"0s"}`, string(got))
}

func TestParsePolicyNamesEachRejectionPolicy(t *testing.T) {
	for name, want := range map[string]groupconc.RejectionPolicy{
		"abort": groupconc.RejectAbort, "discard": groupconc.RejectDiscard,
		"callerRuns": groupconc.RejectCallerRuns, "discardOldest": groupconc.RejectDiscardOldest,
	} {
		b, err := groupconc.ParsePolicy(fmt.Appendf(nil, `{"rejectionPolicy": %q}`, name))
		require.NoError(t, err, name)
		got, err := json.Marshal(mustBuild(t, b))
		require.NoError(t, err)
		code, err := json.Marshal(mustBuild(t, groupconc.NewPolicyBuilder().RejectionPolicy(want)))
		require.NoError(t, err)
		assert.Equal(t, string(code), string(got), name)
	}
}

// TestPolicyJSONRoundTrips: random policies without code hooks are written
// as their settings say, and, read again, give the same limits for every
// key, the same explanations, and the same JSON.
func TestPolicyJSONRoundTrips(t *testing.T) {
	r := seededRand(t)
	keys := append(policyKeys, "never-listed")
	for i := range 300 {
		b, want := randomPolicy(r, r.IntN(2) == 0)
		p := mustBuild(t, b)
		first, err := json.Marshal(p)
		require.NoError(t, err)
		var got map[string]any
		require.NoError(t, json.Unmarshal(first, &got))
		require.Equal(t, want, got, "policy %d: written, then what its settings are", i)
		parsed, err := groupconc.ParsePolicy(first)
		require.NoError(t, err, "policy %d: %s", i, first)
		q := mustBuild(t, parsed)
		for _, k := range keys {
			require.Equal(t, resolved(p, k), resolved(q, k), "policy %d, key %q: %s", i, k, first)
			require.Equal(t, p.Explain(k), q.Explain(k), "policy %d, key %q: %s", i, k, first)
		}
		second, err := json.Marshal(q)
		require.NoError(t, err)
		require.Equal(t, string(first), string(second), "policy %d", i)
	}
}

// resolved is every limit and ancestor p resolves for key, and p's global
// settings.
func resolved(p *groupconc.GroupPolicy, key string) []any {
	return []any{
		p.ResolveConcurrency(key), p.ResolveMaxInFlight(key), p.ResolveQueueThreshold(key), p.ResolveWeight(key),
		p.GlobalMaxInFlight(), p.GlobalQueueThreshold(), p.Isolation(), p.IdleGroupTTL(),
		p.ResolveParent(key), p.Explain(key).Ancestors,
	}
}

// policyKeys are the group keys random policies list, some awkward in JSON.
var policyKeys = []string{"a", "b", "tenant-42", `quote"d`, "sp ace", "ünï/cødé", `back\slash`}

// randomPolicy returns a builder with a random, valid set of the settings
// the JSON form holds, fair share or not, and the JSON object MarshalJSON
// should write for it, built independently of MarshalJSON.
func randomPolicy(r *rand.Rand, fair bool) (*groupconc.PolicyBuilder, map[string]any) {
	b := groupconc.NewPolicyBuilder()
	want := map[string]any{
		"globalMaxInFlight": "unlimited", "globalQueueThreshold": "unlimited",
		"isolation": "off", "idleGroupTTL": "0s",
	}
	maybe := func() bool { return r.IntN(2) == 0 }
	asJSON := func(n int) any {
		if n == groupconc.Unlimited {
			return "unlimited"
		}
		return float64(n)
	}
	limit := func(field string, least int) int {
		n := least + r.IntN(20)
		switch r.IntN(4) {
		case 0:
			n = least
		case 1:
			n = groupconc.Unlimited
		}
		want[field] = asJSON(n)
		return n
	}
	limits := func(field string, least int, unlimited bool) map[string]int {
		m, w := map[string]int{}, map[string]any{}
		for _, k := range policyKeys {
			if maybe() {
				m[k] = least + r.IntN(20)
				if unlimited && maybe() {
					m[k] = groupconc.Unlimited
				}
				w[k] = asJSON(m[k])
			}
		}
		if len(m) > 0 {
			want[field] = w
		}
		return m
	}
	if fair {
		b.Isolation(groupconc.IsolationFairShare)
		want["isolation"] = "fair-share"
	}
	if maybe() {
		b.GlobalMaxInFlight(limit("globalMaxInFlight", 1))
	}
	if !fair && maybe() {
		b.GlobalQueueThreshold(limit("globalQueueThreshold", 0))
	}
	if maybe() {
		b.DefaultMaxConcurrencyPerGroup(limit("defaultMaxConcurrencyPerGroup", 1))
	}
	if maybe() {
		b.PerGroupMaxConcurrency(limits("perGroupMaxConcurrency", 1, true))
	}
	if maybe() {
		b.DefaultMaxInFlightPerGroup(limit("defaultMaxInFlightPerGroup", 1))
	}
	if maybe() {
		b.PerGroupMaxInFlight(limits("perGroupMaxInFlight", 1, true))
	}
	if maybe() {
		b.DefaultQueueThresholdPerGroup(limit("defaultQueueThresholdPerGroup", 0))
	}
	if maybe() {
		b.PerGroupQueueThreshold(limits("perGroupQueueThreshold", 0, true))
	}
	if fair && maybe() {
		n := 1 + r.IntN(8)
		b.DefaultWeightPerGroup(n)
		want["defaultWeightPerGroup"] = float64(n)
	}
	if fair && maybe() {
		b.PerGroupWeight(limits("perGroupWeight", 1, false))
	}
	rp := r.IntN(4)
	b.RejectionPolicy([]groupconc.RejectionPolicy{groupconc.RejectAbort, groupconc.RejectDiscard, groupconc.RejectCallerRuns, groupconc.RejectDiscardOldest}[rp])
	want["rejectionPolicy"] = []string{"abort", "discard", "callerRuns", "discardOldest"}[rp]
	if maybe() {
		d := time.Duration(r.IntN(5)) * 750 * time.Millisecond
		b.IdleGroupTTL(d)
		want["idleGroupTTL"] = map[time.Duration]string{0: "0s", 750 * time.Millisecond: "750ms", 1500 * time.Millisecond: "1.5s", 2250 * time.Millisecond: "2.25s", 3 * time.Second: "3s"}[d]
	}
	if maybe() {
		sep := []string{"/", "ü", "::", `"`}[r.IntN(4)]
		b.ParentSeparator(sep)
		want["parentSeparator"] = sep
	}
	if maybe() {
		cfg := groupconc.PressureConfig{
			BacklogCount: r.IntN(3) * 100,
			BacklogAge:   time.Duration(r.IntN(3)) * 1500 * time.Millisecond,
			Cooldown:     time.Duration(r.IntN(3)) * time.Minute,
		}
		b.PressureWarnings(cfg, nil)
		w := map[string]any{}
		if cfg.BacklogCount > 0 {
			w["backlogCount"] = float64(cfg.BacklogCount)
		}
		if cfg.BacklogAge > 0 {
			w["backlogAge"] = map[time.Duration]string{1500 * time.Millisecond: "1.5s", 3 * time.Second: "3s"}[cfg.BacklogAge]
		}
		if cfg.Cooldown > 0 {
			w["cooldown"] = map[time.Duration]string{time.Minute: "1m0s", 2 * time.Minute: "2m0s"}[cfg.Cooldown]
		}
		if len(w) > 0 {
			want["pressure"] = w
		}
	}
	return b, want
}

func TestParsePolicyKeepsTheParsedPressureConfigForALaterFunc(t *testing.T) {
	b, err := groupconc.ParsePolicy([]byte(`{"pressure": {"backlogCount": 7}}`))
	require.NoError(t, err)
	p := mustBuild(t, b.PressureWarningFunc(func(groupconc.PressureWarning) {}))
	out, err := json.Marshal(p)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"pressure":{"backlogCount":7}`)
}

func TestTheExamplePolicyFileParses(t *testing.T) {
	data, err := os.ReadFile("testdata/policy.json")
	require.NoError(t, err)
	b, err := groupconc.ParsePolicy(data)
	require.NoError(t, err)
	p := mustBuild(t, b)
	out, err := json.Marshal(p)
	require.NoError(t, err)
	assert.JSONEq(t, strings.ReplaceAll(string(data), `"10m"`, `"10m0s"`), string(out), "the file is written as MarshalJSON writes it")
}
