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

// A key that is not valid UTF-8 is shown as encoding/json writes it, each
// bad byte a U+FFFD. The name the page sends back reaches that group, not
// another whose key is that name, nor none.
func TestARowsNameReachesItsOwnGroupWhateverItsBytes(t *testing.T) {
	f := newFixture(t, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	bad, other := "k\xff", "k\uFFFD"
	adaptertest.Submit(t, f.e, bad, f.gate.Task)
	adaptertest.Submit(t, f.e, bad, f.gate.Task)
	adaptertest.Submit(t, f.e, other, f.gate.Task)
	f.gate.WaitStarted(2) // bad: 1 running, 1 waiting (concurrency 1); other: 1 running

	w := get(f.h, "/api/groups?sort=running&limit=1000")
	require.Equal(t, http.StatusOK, w.Code)
	var name string
	for _, r := range object(t, w)["groups"].([]any) {
		row := r.(map[string]any)
		if row["waiting"] == 1.0 {
			name = row["group"].(string) // bad's row, the one with a task waiting
		}
	}
	require.Equal(t, other, name, "shown as encoding/json writes it")
	w = patch(f.h, "/api/group?group="+url.QueryEscape(name), `{"maxConcurrency":5}`)
	assert.Equal(t, http.StatusConflict, w.Code, "two groups are shown as %q; body: %s", name, w.Body)
	st, _ := f.e.GroupStats(other)
	assert.NotEqual(t, 5, st.MaxConcurrency, "a write reached one of two groups shown alike")

	f.e.EvictGroup(other)
	w = patch(f.h, "/api/group?group="+url.QueryEscape(name), `{"maxConcurrency":5}`)
	require.Equal(t, http.StatusOK, w.Code, "body: %s", w.Body)
	st, _ = f.e.GroupStats(bad)
	assert.Equal(t, 5, st.MaxConcurrency, "the row's name reaches its group")
}

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
