package httpgc_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// No displayed name is invalid UTF-8. So a name that is must be a key, sent
// by a client that knows it, and it reaches that group alone. It is not
// read as the U+FFFD form two groups share, nor as no group at all.
func TestANameThatIsNotUTF8ReachesTheGroupOfThatExactKey(t *testing.T) {
	f := newFixture(t, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	bad, other := "k\xff", "k\uFFFD"
	adaptertest.Submit(t, f.e, bad, f.gate.Task)
	adaptertest.Submit(t, f.e, other, f.gate.Task)
	f.gate.WaitStarted(2)

	w := get(f.h, "/api/group?group="+url.QueryEscape(bad))
	require.Equal(t, http.StatusOK, w.Code, "body: %s", w.Body)
	assert.Equal(t, other, object(t, w)["group"], "shown as JSON carries it")

	w = patch(f.h, "/api/group?group="+url.QueryEscape(bad), `{"maxConcurrency":5}`)
	require.Equal(t, http.StatusOK, w.Code, "body: %s", w.Body)
	st, _ := f.e.GroupStats(bad)
	assert.Equal(t, 5, st.MaxConcurrency, "the write reached the group of that key")
	st, _ = f.e.GroupStats(other)
	assert.NotEqual(t, 5, st.MaxConcurrency, "the write reached the other group")

	w = get(f.h, "/api/group?group="+url.QueryEscape("k\xfe"))
	assert.Equal(t, http.StatusNotFound, w.Code, "no group has that key; body: %s", w.Body)
}
