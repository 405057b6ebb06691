package httpgc_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

func TestStatsHasTheDesignedFields(t *testing.T) {
	f := newFixture(t, httpgc.Options{})
	w := get(f.h, "/api/stats")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
	got := object(t, w)
	assert.Equal(t, []string{"blocked", "cancelled", "failed", "globalInFlight", "globalMaxInFlight", "groups", "isolation",
		"rejected", "running", "submitted", "succeeded", "waiting"}, keys(got))
	assert.Equal(t, map[string]any{
		"groups": 3.0, "running": 4.0, "waiting": 2.0, "blocked": 0.0, "globalInFlight": 6.0, "globalMaxInFlight": 64.0,
		"submitted": 6.0, "succeeded": 0.0, "failed": 0.0, "cancelled": 0.0, "rejected": 0.0, "isolation": "off",
	}, got)
}

func TestAnUnlimitedLimitIsTheStringUnlimited(t *testing.T) {
	e := groupconc.New(nil)
	t.Cleanup(func() { e.Close() })
	h, err := httpgc.New(e, httpgc.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	assert.Equal(t, "unlimited", object(t, get(h, "/api/stats"))["globalMaxInFlight"])
}

func TestGroupsAreSortedByOldestWaitByDefault(t *testing.T) {
	synctest.Test(t, testGroupsAreSortedByOldestWaitByDefault)
}

func testGroupsAreSortedByOldestWaitByDefault(t *testing.T) {
	f := newAgedFixture(t, httpgc.Options{})
	w := get(f.h, "/api/groups")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	body := object(t, w)
	assert.Equal(t, []string{"groups", "total"}, keys(body))
	assert.Equal(t, 3.0, body["total"])
	assert.Equal(t, []string{"a", "c", "b"}, groupNames(t, body), "a's waiting task came before c's; b has none")

	row := body["groups"].([]any)[0].(map[string]any)
	assert.Equal(t, rowKeys, keys(row))
	assert.Equal(t, "a", row["group"])
	assert.Equal(t, 2.0, row["running"])
	assert.Equal(t, 1.0, row["waiting"])
	assert.Equal(t, 0.0, row["blocked"])
	assert.Equal(t, 3.0, row["inFlight"])
	assert.Equal(t, 2.0, row["maxConcurrency"])
	assert.Equal(t, "unlimited", row["maxInFlight"])
	assert.Equal(t, 10.0, row["queueThreshold"])
	assert.Equal(t, 1.0, row["weight"])
	assert.Equal(t, 2000.0, row["oldestWaitMs"])
	assert.Equal(t, map[string]any{"maxConcurrency": "group", "maxInFlight": "builtin", "queueThreshold": "default", "weight": "builtin"}, row["source"])
}

func TestGroupsSortLimitAndPrefix(t *testing.T) {
	synctest.Test(t, testGroupsSortLimitAndPrefix)
}

func testGroupsSortLimitAndPrefix(t *testing.T) {
	f := newAgedFixture(t, httpgc.Options{})
	for _, tc := range []struct {
		query string
		total float64
		want  []string
	}{
		{"sort=oldestWait", 3, []string{"a", "c", "b"}},
		{"sort=waiting", 3, []string{"a", "c", "b"}},
		{"sort=running", 3, []string{"a", "b", "c"}},
		{"sort=key", 3, []string{"a", "b", "c"}},
		{"sort=key&limit=2", 3, []string{"a", "b"}},
		{"limit=1", 3, []string{"a"}},
		{"limit=1000", 3, []string{"a", "c", "b"}},
		{"prefix=c", 1, []string{"c"}},
		{"prefix=zz", 0, nil},
	} {
		w := get(f.h, "/api/groups?"+tc.query)
		require.Equal(t, http.StatusOK, w.Code, "%s: %s", tc.query, w.Body)
		body := object(t, w)
		assert.Equal(t, tc.total, body["total"], tc.query)
		assert.Equal(t, tc.want, groupNames(t, body), tc.query)
		assert.NotNil(t, body["groups"], "%s: groups is [], not null", tc.query)
	}
}

func TestBadGroupsQueriesGet400NamingTheParameter(t *testing.T) {
	f := newFixture(t, httpgc.Options{})
	for query, want := range map[string]string{
		"sort=size":  "sort",
		"sort=":      "",
		"limit=0":    "limit",
		"limit=1001": "limit",
		"limit=-1":   "limit",
		"limit=ten":  "limit",
	} {
		w := get(f.h, "/api/groups?"+query)
		if want == "" {
			assert.Equal(t, http.StatusOK, w.Code, "%s: empty means the default", query)
			continue
		}
		assert.Equal(t, http.StatusBadRequest, w.Code, query)
		assert.Contains(t, object(t, w)["error"], want, query)
	}
}

func TestOneGroupIsItsRowAndAnUnknownOneIs404(t *testing.T) {
	f := newFixture(t, httpgc.Options{})
	w := get(f.h, "/api/groups/c")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	row := object(t, w)
	assert.Equal(t, rowKeys, keys(row))
	assert.Equal(t, "c", row["group"])
	assert.Equal(t, 1.0, row["waiting"])
	assert.Equal(t, "default", row["source"].(map[string]any)["queueThreshold"])

	w = get(f.h, "/api/groups/nope")
	assert.Equal(t, http.StatusNotFound, w.Code)
	assert.Contains(t, object(t, w)["error"], `"nope"`)
}

func TestAGroupKeyWithASlashIsReachedEscaped(t *testing.T) {
	f := newFixture(t, httpgc.Options{})
	adaptertest.Submit(t, f.e, "tenant/42", f.gate.Task)
	f.gate.WaitStarted(1)
	w := get(f.h, "/api/groups/tenant%2F42")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, "tenant/42", object(t, w)["group"])
}

func TestExplainShowsEachLimitsStackAndOverrides(t *testing.T) {
	f := newFixture(t, httpgc.Options{})
	w := get(f.h, "/api/groups/a/explain")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	x := object(t, w)
	assert.Equal(t, []string{"group", "maxConcurrency", "maxInFlight", "override", "queueThreshold", "weight"}, keys(x))
	mc := x["maxConcurrency"].(map[string]any)
	assert.Equal(t, 2.0, mc["value"])
	assert.Equal(t, "group", mc["source"])
	stack := mc["stack"].([]any)
	require.NotEmpty(t, stack)
	assert.Equal(t, map[string]any{"source": "group", "value": 2.0}, stack[0], "the deciding setting comes first")
	assert.Equal(t, "unlimited", x["maxInFlight"].(map[string]any)["value"])
	assert.Equal(t, map[string]any{"maxConcurrency": nil, "maxInFlight": nil, "queueThreshold": nil, "weight": nil, "paused": nil}, x["override"])

	assert.Equal(t, http.StatusNotFound, get(f.h, "/api/groups/nope/explain").Code)
}

// TestExplainsOverrideGoesBackAsAPatch: the overrides explain shows are
// taken back by a PATCH as they are, a weight of math.MaxInt included,
// which is a number there and not "unlimited".
func TestExplainsOverrideGoesBackAsAPatch(t *testing.T) {
	e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare))
	gate := adaptertest.NewGate(t)
	adaptertest.Submit(t, e, "a", gate.Task)
	gate.WaitStarted(1)
	h, err := httpgc.New(e, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	require.NoError(t, err)
	f := struct {
		e *groupconc.GroupExecutor
		h http.Handler
	}{e, h}
	w := patch(f.h, "/api/groups/a", fmt.Sprintf(`{"weight":%d,"maxConcurrency":3,"paused":true}`, math.MaxInt))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())

	w = get(f.h, "/api/groups/a/explain")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	var x struct {
		Weight   struct{ Value json.RawMessage }
		Override map[string]json.RawMessage
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &x))
	assert.Equal(t, strconv.Itoa(math.MaxInt), string(x.Weight.Value))
	assert.Equal(t, strconv.Itoa(math.MaxInt), string(x.Override["weight"]))
	assert.Equal(t, "true", string(x.Override["paused"]))

	x.Override["maxConcurrency"] = json.RawMessage("2")
	body, err := json.Marshal(x.Override)
	require.NoError(t, err)
	w = patch(f.h, "/api/groups/a", string(body))
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	o, ok := f.e.GroupOverride("a")
	require.True(t, ok)
	assert.Equal(t, 2, *o.MaxConcurrency)
	assert.Equal(t, math.MaxInt, *o.Weight)
	assert.True(t, *o.Paused)
}

func TestWarningsKeepTheLastOnesNewestFirst(t *testing.T) {
	f := newFixture(t, httpgc.Options{Warnings: 2})
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	for i, key := range []string{"a", "b", "c"} {
		f.h.PressureWarning(groupconc.PressureWarning{GroupKey: key, Trigger: groupconc.TriggerBacklogAge,
			Waiting: i, OldestWait: 5200 * time.Millisecond, Suppressed: 3, At: at.Add(time.Duration(i) * time.Second)})
	}
	w := get(f.h, "/api/warnings")
	require.Equal(t, http.StatusOK, w.Code)
	list := object(t, w)["warnings"].([]any)
	require.Len(t, list, 2, "the ring holds Options.Warnings")
	assert.Equal(t, map[string]any{"group": "c", "trigger": "backlog-age", "waiting": 2.0, "oldestWaitMs": 5200.0,
		"limit": 1.0, "inFlight": 2.0, "suppressed": 3.0, "at": "2026-11-24T10:00:02Z"}, list[0])
	assert.Equal(t, "b", list[1].(map[string]any)["group"])

	var nilHandler *httpgc.Handler
	assert.NotPanics(t, func() { nilHandler.PressureWarning(groupconc.PressureWarning{GroupKey: "a"}) })
}

func TestThePageIsSelfContainedWithANonceCSP(t *testing.T) {
	f := newFixture(t, httpgc.Options{})
	w := get(f.h, "/")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
	assert.Equal(t, "DENY", w.Header().Get("X-Frame-Options"), "for browsers without frame-ancestors")
	csp := w.Header().Get("Content-Security-Policy")
	m := regexp.MustCompile(`script-src 'nonce-([A-Za-z0-9_-]{16,})'`).FindStringSubmatch(csp)
	require.NotNil(t, m, "CSP: %s", csp)
	for _, want := range []string{"default-src 'none'", "style-src 'nonce-" + m[1] + "'", "connect-src 'self'", "frame-ancestors 'none'"} {
		assert.Contains(t, csp, want)
	}
	page := w.Body.String()
	assert.True(t, strings.Contains(page, `<script nonce="`+m[1]+`">`), "the script has the CSP's nonce")
	assert.True(t, strings.Contains(page, `<style nonce="`+m[1]+`">`), "the style has the CSP's nonce")
	for _, external := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)(src|href|action)\s*=\s*["']?(https?:)?//`), // an asset from elsewhere
		regexp.MustCompile(`(?i)url\(|@import`),                             // CSS that loads one
		regexp.MustCompile(`fetch\(\s*['"]/|EventSource\(\s*['"]/`),         // a URL that ignores the mount point
	} {
		assert.False(t, external.MatchString(page), "the page matches %s", external)
	}
	assert.True(t, strings.Contains(page, `'api/events'`), "the page streams from api/events")
	assert.True(t, strings.Contains(page, `read-only`), "the page shows read-only")
	assert.False(t, strings.Contains(page, `id="override"`), "a read-only page has no form")
	assert.Equal(t, "nosniff", w.Header().Get("X-Content-Type-Options"))

	second := get(f.h, "/").Header().Get("Content-Security-Policy")
	assert.NotEqual(t, csp, second, "a fresh nonce per response")
	assert.Equal(t, http.StatusNotFound, get(f.h, "/index.html").Code)
}

func TestThePageOffersOnlyTheWritesAuthorizeGrants(t *testing.T) {
	f := newFixture(t, httpgc.Options{AllowWrites: true, Authorize: func(_ *http.Request, a httpgc.Action) bool {
		return a != httpgc.ActionShutdown
	}})
	page := get(f.h, "/").Body.String()
	assert.True(t, strings.Contains(page, `id="override"`), "the form is there")
	assert.True(t, strings.Contains(page, `id="evict"`), "evict is there")
	assert.False(t, strings.Contains(page, `id="shutdown"`), "shutdown is not granted")
	assert.True(t, strings.Contains(page, "writes allowed"), "the badge says writes allowed")
}

func TestTheHandlerWorksUnderStripPrefix(t *testing.T) {
	f := newFixture(t, httpgc.Options{})
	mux := http.NewServeMux()
	mux.Handle("/debug/groupconc/", http.StripPrefix("/debug/groupconc", f.h))
	assert.Equal(t, http.StatusOK, get(mux, "/debug/groupconc/").Code)
	assert.Equal(t, http.StatusOK, get(mux, "/debug/groupconc/api/stats").Code)
	assert.Equal(t, "a", object(t, get(mux, "/debug/groupconc/api/groups/a"))["group"])
	assert.True(t, strings.HasPrefix(get(mux, "/debug/groupconc/").Body.String(), "<!doctype html>"))
}

func TestDisplayKeyRedactsEveryKeyAndNamesGroupsInURLs(t *testing.T) {
	hash := httpgc.HashKey([]byte("secret"))
	f := newFixture(t, httpgc.Options{DisplayKey: hash, AllowWrites: true, Authorize: allowAll})
	f.h.PressureWarning(groupconc.PressureWarning{GroupKey: "c", Trigger: groupconc.TriggerBacklogCount})
	for _, target := range []string{"/api/groups", "/api/groups?sort=key", "/api/warnings", "/api/groups/" + hash("a")} {
		body := get(f.h, target).Body.String()
		assert.NotRegexp(t, `"[abc]"`, body, target)
	}
	assert.Regexp(t, `^h-[0-9a-f]{16}$`, hash("a"))
	assert.Equal(t, hash("a"), httpgc.HashKey([]byte("secret"))("a"), "one key, one name")
	assert.NotEqual(t, hash("a"), httpgc.HashKey([]byte("other"))("a"))

	row := object(t, get(f.h, "/api/groups/"+hash("a")))
	assert.Equal(t, hash("a"), row["group"])
	assert.Equal(t, 2.0, row["running"])
	assert.Equal(t, http.StatusNotFound, get(f.h, "/api/groups/a").Code, "the real key is not a name")
	w := patch(f.h, "/api/groups/"+hash("b"), `{"maxConcurrency":3}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	st, _ := f.e.GroupStats("b")
	assert.Equal(t, 3, st.MaxConcurrency)
	assert.Equal(t, []string{hash("c")}, groupNames(t, object(t, get(f.h, "/api/groups?prefix="+hash("c")))))
}

func TestADisplayKeyNameTwoGroupsShareIsRefusedForWrites(t *testing.T) {
	f := newFixture(t, httpgc.Options{DisplayKey: func(string) string { return "same" }, AllowWrites: true, Authorize: allowAll})
	assert.Equal(t, http.StatusConflict, get(f.h, "/api/groups/same").Code)
	assert.Equal(t, http.StatusConflict, post(f.h, "/api/groups/same/evict", "").Code)
	assert.Equal(t, 3, f.e.Stats().Groups)
}

func TestAPanickingDisplayKeyNeverShowsTheKey(t *testing.T) {
	f := newFixture(t, httpgc.Options{DisplayKey: func(string) string { panic("boom") }})
	body := get(f.h, "/api/groups").Body.String()
	assert.NotRegexp(t, `"[abc]"`, body)
	assert.Contains(t, body, "(DisplayKey panicked)")
}
