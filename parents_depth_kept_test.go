package groupconc_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A key whose chain ends at a group made before, with too many ancestors
// counting that group's, is refused before any group is made, and the
// error names the key submitted.
func TestAKeyTooDeepBelowAGroupMadeBeforeMakesNoGroup(t *testing.T) {
	e := groupconc.New(mustBuild(t, groupconc.NewPolicyBuilder().ParentSeparator("/")))
	defer e.Close()
	ok := func(context.Context) (int, error) { return 0, nil }
	_, err := groupconc.Do(t.Context(), e, strings.Repeat("a/", 6)+"a", ok, groupconc.SubmitOptions{}) // 6 ancestors
	require.NoError(t, err)
	before := e.Stats().Groups
	for _, key := range []string{strings.Repeat("a/", 9) + "a", strings.Repeat("a/", 8) + "a/e/f"} {
		_, err = groupconc.Do(t.Context(), e, key, ok, groupconc.SubmitOptions{})
		require.ErrorIs(t, err, groupconc.ErrInvalidPolicy, key)
		require.ErrorIs(t, err, groupconc.ErrInvalidTask, key)
		assert.ErrorContains(t, err, `group "`+key+`" has more than 8 ancestors`)
		assert.Equal(t, before, e.Stats().Groups, "groups made for %s", key)
	}
}
