package httpgc_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
)

func TestNewRefusesUnsafeOrBadOptions(t *testing.T) {
	e := groupconc.New(nil)
	t.Cleanup(func() { e.Close() })
	for name, tc := range map[string]struct {
		opts httpgc.Options
		want string
	}{
		"writes without Authorize": {httpgc.Options{AllowWrites: true}, "Authorize"},
		"a short interval":         {httpgc.Options{Interval: 10 * time.Millisecond}, "Interval"},
		"a short heartbeat":        {httpgc.Options{Heartbeat: time.Millisecond}, "Heartbeat"},
		"too many rows":            {httpgc.Options{Rows: 1001}, "Rows"},
		"negative clients":         {httpgc.Options{MaxClients: -1}, "MaxClients"},
		"negative warnings":        {httpgc.Options{Warnings: -1}, "Warnings"},
		"too long a history":       {httpgc.Options{History: 601}, "History"},
		"a negative long run":      {httpgc.Options{LongRun: -time.Second}, "LongRun"},
	} {
		h, err := httpgc.New(e, tc.opts)
		assert.Nil(t, h, name)
		if assert.Error(t, err, name) {
			assert.Contains(t, err.Error(), tc.want, name)
		}
	}
	_, err := httpgc.New(nil, httpgc.Options{})
	assert.Error(t, err, "a nil executor")
	h, err := httpgc.New(e, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	require.NoError(t, err)
	h.Close()
}

// from sets a request's RemoteAddr.
func from(addr string, r *http.Request) *http.Request {
	r.RemoteAddr = addr
	return r
}

func TestSecurityDefaults(t *testing.T) {
	writes := httpgc.Options{AllowWrites: true, Authorize: allowAll}
	json := []string{"Content-Type", "application/json"}
	sameOrigin := append([]string{"Sec-Fetch-Site", "same-origin"}, json...)
	big := `{"maxConcurrency":3` + strings.Repeat(" ", 64<<10) + `}`
	fits := `{"maxConcurrency":3}` + strings.Repeat(" ", 64<<10-len(`{"maxConcurrency":3}`))
	for _, tc := range []struct {
		name    string
		opts    httpgc.Options
		req     *http.Request
		want    int
		changes bool // the request changes group a
	}{
		{"loopback reads", httpgc.Options{}, request("GET", "/api/stats", ""), 200, false},
		{"IPv6 loopback reads", httpgc.Options{}, from("[::1]:4000", request("GET", "/api/stats", "")), 200, false},
		{"a mapped loopback reads", httpgc.Options{}, from("[::ffff:127.0.0.1]:4000", request("GET", "/api/stats", "")), 200, false},
		{"non-loopback without Authorize: the page", httpgc.Options{}, from("192.0.2.1:4000", request("GET", "/", "")), 403, false},
		{"non-loopback without Authorize: the API", httpgc.Options{}, from("192.0.2.1:4000", request("GET", "/api/groups", "")), 403, false},
		{"non-loopback without Authorize: the stream", httpgc.Options{}, from("192.0.2.1:4000", ended(request("GET", "/api/events", ""))), 403, false},
		{"non-loopback without Authorize: an unknown path", httpgc.Options{}, from("192.0.2.1:4000", request("GET", "/nope", "")), 403, false},
		{"X-Forwarded-For is not trusted", httpgc.Options{}, from("192.0.2.1:4000", request("GET", "/api/stats", "", "X-Forwarded-For", "127.0.0.1")), 403, false},
		{"an unparsable RemoteAddr", httpgc.Options{}, from("@", request("GET", "/api/stats", "")), 403, false},
		{"non-loopback with Authorize", httpgc.Options{Authorize: allowAll}, from("192.0.2.1:4000", request("GET", "/api/stats", "")), 200, false},
		{"Authorize refuses a read", httpgc.Options{Authorize: func(*http.Request, httpgc.Action) bool { return false }}, request("GET", "/api/stats", ""), 403, false},
		{"read-only: PATCH", httpgc.Options{}, request("PATCH", "/api/groups/a", `{"maxConcurrency":3}`, sameOrigin...), 405, false},
		{"read-only: evict", httpgc.Options{}, request("POST", "/api/groups/a/evict", ``, sameOrigin...), 405, false},
		{"read-only: shutdown", httpgc.Options{}, request("POST", "/api/groups/a/shutdown", ``, sameOrigin...), 405, false},
		{"read-only even when Authorize grants", httpgc.Options{Authorize: allowAll}, request("PATCH", "/api/groups/a", `{"maxConcurrency":3}`, sameOrigin...), 405, false},
		{"a write is never a GET", writes, request("GET", "/api/groups/a/evict", ""), 405, false},
		{"a method no route has", writes, request("DELETE", "/api/groups/a", "", sameOrigin...), 405, false},
		{"a CORS preflight", writes, request("OPTIONS", "/api/groups/a", "", "Origin", "https://evil.example", "Access-Control-Request-Method", "PATCH"), 405, false},
		{"a same-origin write", writes, request("PATCH", "/api/groups/a", `{"maxConcurrency":3}`, sameOrigin...), 200, true},
		{"a write from no browser", writes, request("PATCH", "/api/groups/a", `{"maxConcurrency":3}`, json...), 200, true},
		{"a cross-site write", writes, request("PATCH", "/api/groups/a", `{"maxConcurrency":3}`, append([]string{"Sec-Fetch-Site", "cross-site"}, json...)...), 403, false},
		{"a same-site write from another origin", writes, request("POST", "/api/groups/a/evict", ``, append([]string{"Sec-Fetch-Site", "same-site"}, json...)...), 403, false},
		{"a cross-origin write without Sec-Fetch-Site", writes, request("PATCH", "/api/groups/a", `{"maxConcurrency":3}`, append([]string{"Origin", "https://evil.example"}, json...)...), 403, false},
		{"Authorize refuses the write", httpgc.Options{AllowWrites: true, Authorize: func(_ *http.Request, a httpgc.Action) bool { return a == httpgc.ActionRead }},
			request("PATCH", "/api/groups/a", `{"maxConcurrency":3}`, sameOrigin...), 403, false},
		{"no content type", writes, request("PATCH", "/api/groups/a", `{"maxConcurrency":3}`, "Sec-Fetch-Site", "same-origin"), 415, false},
		{"a form", writes, request("PATCH", "/api/groups/a", `maxConcurrency=3`, "Content-Type", "application/x-www-form-urlencoded"), 415, false},
		{"text/plain", writes, request("POST", "/api/groups/a/evict", `{}`, "Content-Type", "text/plain"), 415, false},
		{"JSON with a charset", writes, request("PATCH", "/api/groups/a", `{"maxConcurrency":3}`, "Content-Type", "application/json; charset=utf-8"), 200, true},
		{"a body over 64 KiB", writes, request("PATCH", "/api/groups/a", big, sameOrigin...), 413, false},
		{"a body over 64 KiB of unknown length", writes, unknownLength(request("PATCH", "/api/groups/a", big, sameOrigin...)), 413, false},
		{"a body of 64 KiB", writes, request("PATCH", "/api/groups/a", fits, sameOrigin...), 200, true},
		{"a bad value", writes, request("PATCH", "/api/groups/a", `{"maxConcurrency":3,"weight":0}`, sameOrigin...), 422, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.opts)
			before, _ := f.e.GroupStats("a")
			w := serve(f.h, tc.req)
			assert.Equal(t, tc.want, w.Code, w.Body.String())
			for name := range w.Header() {
				assert.False(t, strings.HasPrefix(strings.ToLower(name), "access-control-"), "a CORS header: %s", name)
			}
			after, ok := f.e.GroupStats("a")
			require.True(t, ok)
			assert.Equal(t, tc.changes, after.MaxConcurrency != before.MaxConcurrency, "group a's limit changed: %d -> %d", before.MaxConcurrency, after.MaxConcurrency)
			if w.Code == 405 && strings.HasPrefix(tc.name, "read-only") {
				_, has := w.Header()["Allow"]
				assert.True(t, has, "a 405 says what is allowed")
			}
		})
	}
}

// ended gives r a context that has ended, so that a stream it opens
// returns at once.
func ended(r *http.Request) *http.Request {
	ctx, cancel := context.WithCancel(r.Context())
	cancel()
	return r.WithContext(ctx)
}

// unknownLength hides r's body length, as a chunked upload does.
func unknownLength(r *http.Request) *http.Request {
	r.ContentLength = -1
	r.Body = io.NopCloser(struct{ io.Reader }{r.Body})
	return r
}

func TestAuthorizeIsAskedTheRouteAction(t *testing.T) {
	var asked []httpgc.Action
	f := newFixture(t, httpgc.Options{AllowWrites: true, Authorize: func(_ *http.Request, a httpgc.Action) bool {
		asked = append(asked, a)
		return true
	}})
	for _, tc := range []struct {
		r    *http.Request
		want []httpgc.Action
	}{
		{request("GET", "/api/stats", ""), []httpgc.Action{httpgc.ActionRead}},
		{request("GET", "/api/groups/a/explain", ""), []httpgc.Action{httpgc.ActionRead}},
		{request("PATCH", "/api/groups/a", `{}`, "Content-Type", "application/json"), []httpgc.Action{httpgc.ActionPatch}},
		{request("POST", "/api/groups/a/shutdown", ``, "Content-Type", "application/json"), []httpgc.Action{httpgc.ActionShutdown}},
		{request("POST", "/api/groups/b/evict", ``, "Content-Type", "application/json"), []httpgc.Action{httpgc.ActionEvict}},
		{request("GET", "/", ""), []httpgc.Action{httpgc.ActionRead, httpgc.ActionPatch, httpgc.ActionEvict, httpgc.ActionShutdown}},
	} {
		asked = nil
		w := serve(f.h, tc.r)
		assert.Less(t, w.Code, 300, "%s %s: %s", tc.r.Method, tc.r.URL, w.Body)
		assert.Equal(t, tc.want, asked, "%s %s", tc.r.Method, tc.r.URL)
	}
}

func TestActionNames(t *testing.T) {
	for a, want := range map[httpgc.Action]string{
		httpgc.ActionRead: "read", httpgc.ActionPatch: "patch", httpgc.ActionEvict: "evict",
		httpgc.ActionShutdown: "shutdown", httpgc.Action(0): "Action(0)",
	} {
		assert.Equal(t, want, a.String())
	}
}

func TestAPIResponsesAreNotCached(t *testing.T) {
	f := newFixture(t, httpgc.Options{})
	for _, target := range []string{"/", "/api/stats", "/api/groups", "/api/groups/a", "/api/warnings"} {
		w := get(f.h, target)
		assert.Equal(t, "no-store", w.Header().Get("Cache-Control"), target)
		assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"), target)
	}
}

// "the URL: path, ... | data only: never run, fetched or put in a reply's
// header". http.ServeMux would redirect a path it cleans, repeating the
// path and query in Location, and out of a StripPrefix mount.
func TestAnUncleanPathGets404AndNoReplyHeaderRepeatsTheURL(t *testing.T) {
	f, events := writable(t)
	strip := http.NewServeMux()
	strip.Handle("/debug/groupconc", http.StripPrefix("/debug/groupconc", f.h))   // leaves ""
	strip.Handle("/debug/groupconc/", http.StripPrefix("/debug/groupconc/", f.h)) // leaves no leading /
	for _, tc := range []struct {
		h              http.Handler
		method, target string
	}{
		{f.h, "GET", "/api/./groups?prefix=%3Cscript%3Eevil"},
		{f.h, "GET", "/api//group?group=evil"},
		{f.h, "GET", "/api/groups/evil/../a"},
		{f.h, "GET", "/api/stats/.?evil"},
		{f.h, "GET", "//?evil"},
		{f.h, "GET", "/./?evil"},
		{f.h, "PATCH", "/api/groups/evil/../a"},
		{f.h, "PATCH", "/api//group?group=a&evil"},
		{f.h, "POST", "/api/groups/evil/../a/evict"},
		{strip, "GET", "/debug/groupconc?evil"},
		{strip, "GET", "/debug/groupconc/api/stats?evil"},
	} {
		w := serve(tc.h, request(tc.method, tc.target, `{"maxConcurrency":5}`, "Content-Type", "application/json"))
		assert.Equal(t, http.StatusNotFound, w.Code, "%s %s: %s", tc.method, tc.target, w.Body)
		for name, values := range w.Header() {
			for _, v := range values {
				assert.NotContains(t, v, "evil", "%s %s: header %s", tc.method, tc.target, name)
				assert.NotContains(t, v, "api", "%s %s: header %s", tc.method, tc.target, name)
			}
		}
	}
	st, ok := f.e.GroupStats("a")
	require.True(t, ok, "nothing evicted")
	assert.Equal(t, 2, st.MaxConcurrency, "nothing changed")
	require.Len(t, *events, 3, "every write refused is audited")
	for _, ev := range *events {
		assert.Equal(t, http.StatusNotFound, ev.Status)
		assert.ErrorIs(t, ev.Err, httpgc.ErrRefused)
	}

	// The routes' own paths, and an escaped "." in a key, are served.
	for _, target := range []string{"/", "/api/groups/a", "/api/groups/%2E%2E", "/api/group?group=..%2Fa"} {
		w := get(f.h, target)
		assert.NotEqual(t, http.StatusTemporaryRedirect, w.Code, target)
		assert.Empty(t, w.Header().Get("Location"), target)
	}
	assert.Equal(t, http.StatusOK, get(f.h, "/api/groups/a").Code)
}
