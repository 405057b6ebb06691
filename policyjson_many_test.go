package groupconc_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// TestParsePolicyNamesTwentyBadValuesAndCountsTheRest: a document of many
// bad keys gets an error of a few kilobytes, not a copy of the document.
func TestParsePolicyNamesTwentyBadValuesAndCountsTheRest(t *testing.T) {
	var doc strings.Builder
	doc.WriteString(`{"perGroupMaxConcurrency":{`)
	const bad = 20000
	for i := range bad {
		if i > 0 {
			doc.WriteString(",")
		}
		fmt.Fprintf(&doc, "%q:0", fmt.Sprintf("%060d", i))
	}
	doc.WriteString("}}")

	_, err := groupconc.ParsePolicy([]byte(doc.String()))
	require.Error(t, err)
	assert.True(t, errors.Is(err, groupconc.ErrInvalidPolicy))
	msg := err.Error()
	assert.Less(t, len(msg), 4096, "the error copies the input")
	assert.Equal(t, 20, strings.Count(msg, "is below 1"))
	assert.True(t, strings.HasSuffix(msg, fmt.Sprintf("; and %d more", bad-20)), "the count of the rest")
	assert.True(t, strings.Contains(msg, `perGroupMaxConcurrency["`+fmt.Sprintf("%060d", 0)+`"]`), "the first is named")
}
