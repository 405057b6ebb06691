package groupconc_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// The edges of a \u escape of a surrogate: a low half first, or a high
// half followed by anything but a \u escape of a low half, is refused. The
// least and the greatest pairs are read.
func TestParsePolicyReadsSurrogatePairsToTheirEdges(t *testing.T) {
	for _, doc := range []string{
		`{"parentSeparator": "\udc00\udc01"}`, // a low half, then another
		`{"parentSeparator": "\ud800xudc00"}`, // a high half, then no escape
		`{"parentSeparator": "\ud800\ud800"}`, // two high halves
		`{"parentSeparator": "\ud800\ue000"}`, // a high half, then past the low ones
	} {
		b, err := groupconc.ParsePolicy([]byte(doc))
		assert.Nil(t, b, doc)
		assert.EqualError(t, err, `groupconc: invalid policy: the document escapes half a UTF-16 surrogate pair, \u`+doc[23:27]+`, alone (byte 21)`, doc)
	}
	for doc, key := range map[string]string{
		`{"perGroupMaxConcurrency": {"\ud800\udc00": 2}}`: "\U00010000",
		`{"perGroupMaxConcurrency": {"\ud800\udfff": 2}}`: "\U000103ff",
		`{"perGroupMaxConcurrency": {"\udbff\udfff": 2}}`: "\U0010ffff",
	} {
		b, err := groupconc.ParsePolicy([]byte(doc))
		require.NoError(t, err, doc)
		assert.Equal(t, 2, mustBuild(t, b).ResolveConcurrency(key), doc)
	}
}

// A document cut short inside an escape is refused with an error, never a
// panic, wherever it ends.
func TestParsePolicyRefusesADocumentCutShortInAnEscape(t *testing.T) {
	for doc, want := range map[string]string{
		`{"parentSeparator": "\`:          "parentSeparator: the JSON ends early",
		`{"parentSeparator": "\u12`:       "parentSeparator: the JSON ends early",
		`{"parentSeparator": "\ud800`:     `the document escapes half a UTF-16 surrogate pair, \ud800, alone (byte 21)`,
		`{"parentSeparator": "\ud800\`:    `the document escapes half a UTF-16 surrogate pair, \ud800, alone (byte 21)`,
		`{"parentSeparator": "\ud800\udc`: `the document escapes half a UTF-16 surrogate pair, \ud800, alone (byte 21)`,
	} {
		b, err := groupconc.ParsePolicy([]byte(doc))
		assert.Nil(t, b, doc)
		assert.EqualError(t, err, "groupconc: invalid policy: "+want, doc)
	}
}

// A syntax error with no bad value found before it is the whole error.
// A weight is a number: "unlimited" is no weight.
func TestParsePolicyNamesASyntaxErrorAloneAndRefusesAnUnlimitedWeight(t *testing.T) {
	_, err := groupconc.ParsePolicy([]byte(`{"globalMaxInFlight": }`))
	assert.EqualError(t, err, `groupconc: invalid policy: globalMaxInFlight: JSON syntax error at byte 22: invalid character '}' looking for beginning of value`)
	_, err = groupconc.ParsePolicy([]byte(`{"perGroupWeight": {"a": "unlimited"}, "isolation": "fair-share"}`))
	assert.EqualError(t, err, `groupconc: invalid policy: perGroupWeight["a"]: "unlimited" is not a whole number`)
}

// A nil policy, and a zero one (as json.Unmarshal leaves it), write
// DefaultPolicy, as New reads them.
func TestMarshalJSONOfANilOrZeroPolicyWritesTheDefault(t *testing.T) {
	want, err := groupconc.DefaultPolicy().MarshalJSON()
	require.NoError(t, err)
	for name, p := range map[string]*groupconc.GroupPolicy{"nil": nil, "zero": new(groupconc.GroupPolicy)} {
		got, err := p.MarshalJSON()
		require.NoError(t, err, name)
		assert.JSONEq(t, string(want), string(got), name)
	}
}
