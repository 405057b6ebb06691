package httpgc_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc/httpgc"
)

// open starts a GET of path on srv with header's pairs, as a browser
// would send it. It returns the response with its body still open.
func open(t *testing.T, ctx context.Context, srv *httptest.Server, path string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// assertNoCORS checks that resp lets no other origin read it.
func assertNoCORS(t *testing.T, resp *http.Response, what string) {
	t.Helper()
	for name := range resp.Header {
		assert.False(t, strings.HasPrefix(strings.ToLower(name), "access-control-"), "%s: a CORS header: %s", what, name)
	}
}

func TestAnotherSitesPageCannotTakeTheStreamsFromTheDashboard(t *testing.T) {
	f := newFixture(t, httpgc.Options{MaxClients: 2})
	srv := httptest.NewServer(f.h)
	defer srv.Close() // after every body is closed: Cleanup runs later
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	host := strings.TrimPrefix(srv.URL, "http://")

	// More hostile streams than MaxClients, each as a browser sends one.
	for _, tc := range []struct {
		name   string
		header []string
		want   string // in the 403's message
	}{
		{"EventSource from another site", []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}, `Sec-Fetch-Site "cross-site"`},
		{"an <img> from another site", []string{"Sec-Fetch-Site", "cross-site"}, `Sec-Fetch-Site "cross-site"`},
		{"EventSource from a same-site origin", []string{"Sec-Fetch-Site", "same-site", "Origin", "http://127.0.0.1:1"}, `Sec-Fetch-Site "same-site"`},
		{"an old browser's EventSource", []string{"Origin", "https://evil.example"}, `Origin "https://evil.example" is not Host "` + host + `"`},
	} {
		resp := open(t, ctx, srv, "/api/events", tc.header...)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, tc.name)
		assertNoCORS(t, resp, tc.name)
		if resp.StatusCode == http.StatusForbidden {
			var body struct{ Error string }
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body), tc.name)
			assert.Contains(t, body.Error, tc.want, tc.name)
		}
	}

	// The operator's page, and a client with neither header, still stream.
	for _, tc := range []struct {
		name   string
		header []string
	}{
		{"the dashboard's EventSource", []string{"Sec-Fetch-Site", "same-origin"}},
		{"curl", nil},
	} {
		resp := open(t, ctx, srv, "/api/events", tc.header...)
		assert.Equal(t, http.StatusOK, resp.StatusCode, tc.name)
		assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"), tc.name)
		assertNoCORS(t, resp, tc.name)
	}
}

func TestAnotherSitesPageCannotReadTheAPIButMayLinkToThePage(t *testing.T) {
	f := newFixture(t, httpgc.Options{})
	crossSite := []string{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"}
	for _, tc := range []struct {
		req  *http.Request
		want int
	}{
		{request("GET", "/api/stats", "", crossSite...), 403},
		{request("GET", "/api/groups?limit=1000", "", crossSite...), 403},
		{request("GET", "/api/group?group=a", "", crossSite...), 403},
		{request("GET", "/api/groups/a/explain", "", crossSite...), 403},
		{request("GET", "/api/warnings", "", "Origin", "http://localhost:8080"), 403},
		{request("HEAD", "/api/events", "", crossSite...), 403},
		{request("GET", "/api/groups", "", "Sec-Fetch-Site", "same-origin", "Origin", "http://127.0.0.1:8080"), 200},
		{request("GET", "/api/groups", "", "Sec-Fetch-Site", "none"), 200}, // typed into the address bar
		{request("GET", "/", "", "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate"), 200},
	} {
		w := serve(f.h, tc.req)
		assert.Equal(t, tc.want, w.Code, "%s %s %v: %s", tc.req.Method, tc.req.URL, tc.req.Header, w.Body)
		for name := range w.Header() {
			assert.False(t, strings.HasPrefix(strings.ToLower(name), "access-control-"), "a CORS header: %s", name)
		}
	}
}
