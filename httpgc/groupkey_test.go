package httpgc_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// awkwardKeys are group keys that path cleaning, escaping or a query
// string could mangle.
var awkwardKeys = []string{".", "..", "a/b", "../a", "a/./b", "%", "a%2Fb", "%zz", " spaced key ",
	"plus+sign", "q?x=1#frag", "semi;colon", "ünïcødé/키", "back\\slash"}

// call makes a same-origin JSON request to srv and decodes the JSON reply.
func call(t *testing.T, srv *httptest.Server, method, target, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+target, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	if len(b) > 0 {
		require.NoError(t, json.Unmarshal(b, &m), "%s %s: %s", method, target, b)
	}
	return resp.StatusCode, m
}

func TestAnyGroupKeyRoundTripsThroughTheAPI(t *testing.T) {
	f := newFixture(t, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	for _, key := range awkwardKeys {
		adaptertest.Submit(t, f.e, key, f.gate.Task)
	}
	f.gate.WaitStarted(len(awkwardKeys))
	mux := http.NewServeMux()
	mux.Handle("/debug/groupconc/", http.StripPrefix("/debug/groupconc", f.h))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	const base = "/debug/groupconc/api/group"

	code, list := call(t, srv, "GET", "/debug/groupconc/api/groups?sort=key&limit=1000", "")
	require.Equal(t, http.StatusOK, code)
	listed := groupNames(t, list)
	for _, key := range awkwardKeys {
		q := "?group=" + url.QueryEscape(key)
		assert.Contains(t, listed, key, "the list shows %q as it is", key)

		code, row := call(t, srv, "GET", base+q, "")
		if assert.Equal(t, http.StatusOK, code, "GET %q: %v", key, row) {
			assert.Equal(t, key, row["group"], "GET %q", key)
			assert.Equal(t, 1.0, row["running"], "GET %q", key)
		}
		code, x := call(t, srv, "GET", base+"/explain"+q, "")
		if assert.Equal(t, http.StatusOK, code, "explain %q: %v", key, x) {
			assert.Equal(t, key, x["group"], "explain %q", key)
		}
		code, row = call(t, srv, "PATCH", base+q, `{"maxConcurrency":3}`)
		if assert.Equal(t, http.StatusOK, code, "PATCH %q: %v", key, row) {
			assert.Equal(t, key, row["group"], "PATCH %q", key)
		}
		st, ok := f.e.GroupStats(key)
		assert.True(t, ok && st.MaxConcurrency == 3, "PATCH %q reached its group: %d", key, st.MaxConcurrency)

		code, row = call(t, srv, "POST", base+"/shutdown"+q, "")
		if assert.Equal(t, http.StatusOK, code, "shutdown %q: %v", key, row) {
			assert.Equal(t, key, row["group"], "shutdown %q", key)
		}
		code, _ = call(t, srv, "POST", base+"/evict"+q, "")
		assert.Equal(t, http.StatusNoContent, code, "evict %q", key)
		_, ok = f.e.GroupStats(key)
		assert.False(t, ok, "evict %q reached its group", key)
	}
	for _, g := range []string{"a", "b", "c"} {
		_, ok := f.e.GroupStats(g)
		assert.True(t, ok, "group %s is untouched", g)
	}
}

func TestAPathEscapedKeyReachesItsGroup(t *testing.T) {
	f := newFixture(t, httpgc.Options{})
	keys := []string{"a/b", "../a", "%", "a%2Fb", " spaced key ", "q?x=1#frag", "ünïcødé/키"}
	for _, key := range keys {
		adaptertest.Submit(t, f.e, key, f.gate.Task)
	}
	f.gate.WaitStarted(len(keys))
	srv := httptest.NewServer(f.h)
	t.Cleanup(srv.Close)
	for _, key := range keys {
		code, row := call(t, srv, "GET", "/api/groups/"+url.PathEscape(key)+"/explain", "")
		if assert.Equal(t, http.StatusOK, code, "%q", key) {
			assert.Equal(t, key, row["group"])
		}
	}
}

func TestTheGroupRoutesWantTheGroupParameter(t *testing.T) {
	f := newFixture(t, httpgc.Options{})
	w := get(f.h, "/api/group")
	assert.Equal(t, http.StatusBadRequest, w.Code)
	assert.Contains(t, object(t, w)["error"], "group")
	w = get(f.h, "/api/group?group=")
	assert.Equal(t, http.StatusNotFound, w.Code, "an empty key is a key")
	assert.Contains(t, object(t, w)["error"], `no group ""`)
}

func TestErrorsQuoteWhatTheyEchoAndCutIt(t *testing.T) {
	f := newFixture(t, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	long := strings.Repeat("x", 1000) + "\n<script>"
	for _, w := range []*httptest.ResponseRecorder{
		get(f.h, "/api/group?group="+url.QueryEscape(long)),
		get(f.h, "/api/groups/"+url.PathEscape(long)),
		get(f.h, "/api/groups?sort="+url.QueryEscape(long)),
		get(f.h, "/api/groups?limit="+url.QueryEscape(long)),
		patch(f.h, "/api/groups/a", `{"`+long[:1000]+`":1}`),
		patch(f.h, "/api/groups/a", `{"maxConcurrency":"`+long[:1000]+`"}`),
		post(f.h, "/api/groups/a/evict", `{"`+long[:1000]+`":1}`),
	} {
		msg, _ := object(t, w)["error"].(string)
		require.NotEmpty(t, msg, "%d: %s", w.Code, w.Body)
		assert.Less(t, len(msg), 320, "the message is cut: %s", msg)
		assert.Contains(t, msg, `"xxx`, "the input is quoted: %s", msg)
		assert.NotContains(t, msg, "\n", "a newline is escaped: %s", msg)
	}
}

func TestThePageNamesAGroupInTheQuery(t *testing.T) {
	f := newFixture(t, httpgc.Options{})
	page := get(f.h, "/").Body.String()
	assert.Contains(t, page, `'api/group' + (action || '') + '?group=' + encodeURIComponent(key)`)
	assert.NotContains(t, page, `'api/groups/' +`, "no group key goes into a path")
}
