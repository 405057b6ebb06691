package groupconc_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// keysPolicy builds a fair-share policy whose every map holds keys: the
// concurrency, bulkhead, threshold and weight maps. It returns nil if
// Build refuses it (an empty key).
func keysPolicy(t *testing.T, keys []string, n int) *groupconc.GroupPolicy {
	t.Helper()
	m := map[string]int{}
	for i, k := range keys {
		m[k] = 1 + (n+i)%7
	}
	p, err := groupconc.NewPolicyBuilder().
		Isolation(groupconc.IsolationFairShare).
		PerGroupMaxConcurrency(m).PerGroupMaxInFlight(m).
		PerGroupQueueThreshold(m).PerGroupWeight(m).
		Build()
	if err != nil {
		return nil
	}
	return p
}

// checkKeysRoundTrip checks the promise of MarshalJSON for p, built from
// keys: the JSON parses back to a policy that writes the same bytes and
// resolves every key alike, or MarshalJSON names a key it cannot write.
func checkKeysRoundTrip(t *testing.T, p *groupconc.GroupPolicy, keys []string) {
	t.Helper()
	data, err := p.MarshalJSON()
	var bad []string
	for _, k := range keys {
		if !utf8.ValidString(k) {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		require.Error(t, err, "keys %q are not valid UTF-8, got %s", bad, data)
		msg := err.Error()
		assert.True(t, utf8.ValidString(msg), "the error is valid UTF-8: %q", msg)
		assert.Contains(t, msg, "UTF-8")
		named := false
		for _, k := range bad {
			named = named || strings.Contains(msg, echoed(k))
		}
		assert.True(t, named, "error %q names one of %q", msg, bad)
		return
	}
	require.NoError(t, err)
	b, err := groupconc.ParsePolicy(data)
	require.NoError(t, err, "ParsePolicy of %s", data)
	q, err := b.Build()
	require.NoError(t, err)
	again, err := q.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, string(data), string(again))
	for _, k := range keys {
		require.Equal(t, resolved(p, k), resolved(q, k), "key %q", k)
	}
}

// echoed is the part of an error that names s: s quoted, and cut if long.
func echoed(s string) string {
	if len(s) <= 64 {
		return strconv.Quote(s)
	}
	n := 32 // a rune start: the bytes before it quote as in s
	for !utf8.RuneStart(s[n]) && n > 28 {
		n--
	}
	q := strconv.Quote(s[:n])
	return q[:len(q)-1]
}

func TestMarshalJSONNamesAKeyThatIsNotUTF8InEveryMap(t *testing.T) {
	for _, set := range []func(*groupconc.PolicyBuilder, map[string]int){
		func(b *groupconc.PolicyBuilder, m map[string]int) { b.PerGroupMaxConcurrency(m) },
		func(b *groupconc.PolicyBuilder, m map[string]int) { b.PerGroupMaxInFlight(m) },
		func(b *groupconc.PolicyBuilder, m map[string]int) { b.PerGroupQueueThreshold(m) },
		func(b *groupconc.PolicyBuilder, m map[string]int) { b.PerGroupWeight(m) },
	} {
		b := groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare)
		set(b, map[string]int{"a\xff": 2, "a\xfe": 3, "ok": 4})
		p := mustBuild(t, b)
		_, err := p.MarshalJSON()
		require.Error(t, err)
		assert.Contains(t, err.Error(), `"a\xfe"`, "the first bad key, in sorted order")
		_, err = json.Marshal(p)
		require.Error(t, err, "json.Marshal fails as MarshalJSON does")
	}
}

func TestMarshalJSONCutsALongKeyThatIsNotUTF8(t *testing.T) {
	key := strings.Repeat("\xff", 1<<20)
	p := mustBuild(t, groupconc.NewPolicyBuilder().PerGroupMaxConcurrency(map[string]int{key: 2}))
	_, err := p.MarshalJSON()
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 512, "the error is short")
	assert.Contains(t, err.Error(), echoed(key))
}

// FuzzPolicyJSONKeys: a policy with any keys in its maps writes JSON that
// parses back to the same policy, or MarshalJSON names a key it cannot
// write.
func FuzzPolicyJSONKeys(f *testing.F) {
	f.Add("a", "b", 1)
	f.Add("a\xff", "a\xfe", 2)
	f.Add("\xff", "\xfe", 3)
	f.Add("ünï", "\xc3", 4)
	f.Add("quote\"d\n", "\u2028<&>", 5)
	f.Add("\x00", "\ufffd", 6)
	f.Fuzz(func(t *testing.T, k1, k2 string, n int) {
		keys := []string{k1, k2}
		if p := keysPolicy(t, keys, n); p != nil {
			checkKeysRoundTrip(t, p, keys)
		}
	})
}

// TestPolicyJSONWithRandomKeysRoundTripsOrNamesTheKey runs the fuzz check
// over many random keys: bytes of runes, halves of runes and stray bytes.
func TestPolicyJSONWithRandomKeysRoundTripsOrNamesTheKey(t *testing.T) {
	r := seededRand(t)
	parts := []string{"a", "Z", "ü", "\xc3", "\xbc", "\xff", "\n", `"`, `\`, "\ufffd", "\u2028", "<", "\x00", "€", "\xe2\x82"}
	for i := range 500 {
		keys := make([]string, 1+r.IntN(4))
		for j := range keys {
			var sb strings.Builder
			for range 1 + r.IntN(6) {
				sb.WriteString(parts[r.IntN(len(parts))])
			}
			keys[j] = sb.String()
		}
		if p := keysPolicy(t, keys, i); p != nil {
			checkKeysRoundTrip(t, p, keys)
		}
	}
}

// A document that is not valid UTF-8 is refused, naming where: JSON would
// read the byte as U+FFFD, and the limit would land on another group.
func TestParsePolicyRefusesBytesThatAreNotUTF8(t *testing.T) {
	for doc, at := range map[string]int{
		"{\"perGroupMaxConcurrency\": {\"\xff\": 3}}":  29,
		"{\"parentSeparator\": \"\xfe\"}":              21,
		"{\"parentSeparator\": \"é\xe9\"}":             23, // é is two valid bytes
		"{\"perGroupMaxConcurrency\": {\"a\": 3}}\xc3": 36, // half a rune at the end
	} {
		b, err := groupconc.ParsePolicy([]byte(doc))
		assert.Nil(t, b)
		require.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
		assert.EqualError(t, err, fmt.Sprintf("%v: the document is not valid UTF-8 (byte %d)", groupconc.ErrInvalidPolicy, at), "%q", doc)
	}
}

// A \u escape of half a UTF-16 surrogate pair, alone, is refused, naming
// where: JSON would read it as U+FFFD, and the limit would land on another
// group. A whole pair, and an escaped backslash before a u, are read.
func TestParsePolicyRefusesHalfASurrogatePairAlone(t *testing.T) {
	for doc, at := range map[string]int{
		`{"perGroupMaxConcurrency": {"\ud800": 2}}`:              29,
		`{"perGroupMaxConcurrency": {"a\udc00": 2}}`:             30,
		`{"perGroupMaxConcurrency": {"\ud800\u0041": 2}}`:        29,
		`{"perGroupMaxConcurrency": {"\ud800": 2, "\udc00": 3}}`: 29,
		`{"parentSeparator": "\udbff"}`:                          21,
	} {
		b, err := groupconc.ParsePolicy([]byte(doc))
		assert.Nil(t, b, doc)
		require.ErrorIs(t, err, groupconc.ErrInvalidPolicy, doc)
		want := fmt.Sprintf("%v: the document escapes half a UTF-16 surrogate pair, %s, alone (byte %d)", groupconc.ErrInvalidPolicy, doc[at:at+6], at)
		assert.EqualError(t, err, want, doc)
	}
	b, err := groupconc.ParsePolicy([]byte(`{"perGroupMaxConcurrency": {"\ud83d\ude00": 2, "\\ud800": 3}}`))
	require.NoError(t, err)
	p := mustBuild(t, b)
	assert.Equal(t, 2, p.ResolveConcurrency("😀"))
	assert.Equal(t, 3, p.ResolveConcurrency(`\ud800`))
}
