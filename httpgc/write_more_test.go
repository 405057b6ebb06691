package httpgc_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc/httpgc"
)

// fieldsBody returns a JSON object of n fields f0, f1..., each given
// times times, all null.
func fieldsBody(n, times int) string {
	var parts []string
	for i := range n {
		for range times {
			parts = append(parts, fmt.Sprintf(`"f%d":null`, i))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// A refused patch lists at most eight problems, in field order, and then
// says how many more there are, so that a huge body makes no huge answer.
// Eight problems are all listed, with no count after them. That holds for
// unknown fields and for repeated ones.
func TestARefusalListsEightProblemsAndCountsTheRest(t *testing.T) {
	f, _ := writable(t)
	for _, c := range []struct {
		body       string
		shown      int
		more, what string
	}{
		{fieldsBody(8, 1), 8, "", "unknown field"},
		{fieldsBody(9, 1), 8, "; and 1 more", "unknown field"},
		{fieldsBody(10, 1), 8, "; and 2 more", "unknown field"},
		{fieldsBody(8, 2), 8, "", "repeated field"},
		{fieldsBody(10, 2), 8, "; and 2 more", "repeated field"},
	} {
		w := patch(f.h, "/api/groups/a", c.body)
		require.Equal(t, http.StatusUnprocessableEntity, w.Code, c.body)
		msg := object(t, w)["error"].(string)
		assert.Equal(t, c.shown, strings.Count(msg, c.what), c.body)
		for i := range c.shown {
			assert.Contains(t, msg, fmt.Sprintf(`"f%d"`, i), c.body)
		}
		assert.NotContains(t, msg, fmt.Sprintf(`"f%d"`, c.shown), c.body)
		if c.more == "" {
			assert.NotContains(t, msg, "more", c.body)
		} else {
			assert.True(t, strings.HasSuffix(msg, c.more), "%s: %s", c.body, msg)
		}
	}
	st, _ := f.e.GroupStats("a")
	assert.Equal(t, 2, st.MaxConcurrency, "nothing changed")
}

// With writes off, a write gets 405 and an Allow header saying what the
// URL still takes: a group's URL is still read (GET, HEAD), while the
// evict and shutdown URLs take nothing at all.
func TestAWriteToAReadOnlyHandlerIsToldWhatTheURLAllows(t *testing.T) {
	f := newFixture(t, httpgc.Options{Authorize: allowAll})
	for _, c := range []struct{ method, target, allow string }{
		{http.MethodPatch, "/api/groups/a", "GET, HEAD"},
		{http.MethodPatch, "/api/group?group=a", "GET, HEAD"},
		{http.MethodPost, "/api/groups/a/evict", ""},
		{http.MethodPost, "/api/group/shutdown?group=a", ""},
	} {
		w := serve(f.h, request(c.method, c.target, "", "Content-Type", "application/json", "Sec-Fetch-Site", "same-origin"))
		require.Equal(t, http.StatusMethodNotAllowed, w.Code, "%s %s", c.method, c.target)
		allow, has := w.Header()["Allow"]
		require.True(t, has, "%s %s: a 405 says what is allowed", c.method, c.target)
		assert.Equal(t, []string{c.allow}, allow, "%s %s", c.method, c.target)
	}
}

// failAfter is a body that yields a whole patch and then fails, as a
// connection that breaks before the body's end.
type failAfter struct{ r io.Reader }

func (b failAfter) Read(p []byte) (int, error) {
	if n, _ := b.r.Read(p); n > 0 {
		return n, nil
	}
	return 0, errors.New("connection reset")
}

// A body that cannot be read to its end gets 400, and nothing changes,
// even when what did arrive is a whole patch: the client never finished
// saying what it wants.
func TestAWriteWhoseBodyFailsGets400AndChangesNothing(t *testing.T) {
	f, events := writable(t)
	r := request(http.MethodPatch, "/api/groups/a", "", "Content-Type", "application/json", "Sec-Fetch-Site", "same-origin")
	r.Body = io.NopCloser(failAfter{strings.NewReader(`{"maxConcurrency":5}`)})
	r.ContentLength = -1
	w := serve(f.h, r)
	assert.Equal(t, http.StatusBadRequest, w.Code, w.Body.String())
	assert.Contains(t, object(t, w)["error"], "connection reset")
	st, _ := f.e.GroupStats("a")
	assert.Equal(t, 2, st.MaxConcurrency, "nothing changed")
	require.Len(t, *events, 1)
	assert.ErrorIs(t, (*events)[0].Err, httpgc.ErrRefused)
}

// An evict or a shutdown with a body over 64 KiB gets 413 alone, and the
// group is neither evicted nor shut down, whether the body's length is
// said or not.
func TestAnEvictOrShutdownWithAnOversizedBodyDoesNothing(t *testing.T) {
	big := "{" + strings.Repeat(" ", 64<<10) + "}"
	for _, target := range []string{"/api/groups/a/evict", "/api/groups/a/shutdown"} {
		for _, known := range []bool{true, false} {
			f, _ := writable(t)
			r := request(http.MethodPost, target, big, "Content-Type", "application/json", "Sec-Fetch-Site", "same-origin")
			if !known {
				r = unknownLength(r)
			}
			w := serve(f.h, r)
			require.Equal(t, http.StatusRequestEntityTooLarge, w.Code, "%s, length known %v", target, known)
			assert.Equal(t, map[string]any{"error": "request body over 64 KiB"}, object(t, w), "one answer only")
			st, ok := f.e.GroupStats("a")
			require.True(t, ok, "%s, length known %v: group a is still there", target, known)
			assert.Equal(t, 1, st.Waiting, "%s, length known %v: a's waiting task still waits", target, known)
		}
	}
}
