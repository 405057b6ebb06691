package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// keyOf returns the group key Handler's default key gives target.
func keyOf(t *testing.T, target string) string {
	t.Helper()
	keys := make(chan string, 1)
	b := groupconc.NewPolicyBuilder().TaskLifecycleListener(groupconc.ListenerFuncs{
		Submitted: func(key, _ string) { keys <- key },
	})
	e := newExecutor(t, b, nil)
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	w := httptest.NewRecorder()
	httplimit.Handler(e, ok, httplimit.ServerOptions{}).ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	require.Equal(t, http.StatusOK, w.Code, "body: %s", w.Body)
	return <-keys
}

// Two paths that name two resources are two groups. An escaped '/' is part
// of a segment, as http.ServeMux reads it, not a separator.
func TestTheDefaultKeyKeepsPathsThatDifferOnlyInAnEscapedSlashApart(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"/a%2Fb", "/a/b"},
		{"/a%252Fb", "/a%2Fb"},
		{"/100%25", "/100%2525"},
	} {
		assert.NotEqual(t, keyOf(t, tc.a), keyOf(t, tc.b), "%s and %s are one group", tc.a, tc.b)
	}
}

// Spellings of one path are one group, so that no client escapes its
// path's limit by writing it another way.
func TestTheDefaultKeyIsOneForEverySpellingOfAPath(t *testing.T) {
	for _, tc := range []struct{ target, key string }{
		{"/a/b", "/a/b"},
		{"/%61/b", "/a/b"},
		{"/caf%C3%A9", "/café"},
		{"/a%2fb", "/a%2Fb"},
		{"/a%2Fb", "/a%2Fb"},
		{"/100%25", "/100%25"},
		{"/x%20y", "/x y"},
		{"/a%ff", "/a%FF"},      // a byte that is not UTF-8 stays escaped
		{"/a%C3", "/a%C3"},      // so does half a character
		{"/%C3%A9%FF", "/é%FF"}, // and only it
	} {
		assert.Equal(t, tc.key, keyOf(t, tc.target), "key of %q", tc.target)
	}
}
