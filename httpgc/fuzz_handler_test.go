package httpgc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/kobe/groupconc/httpgc"
)

// FuzzHandler sends the handler one request of any method, target, host,
// headers and body, as a hostile client or page could, after some writes or
// none, then reads the groups. Every answer must be one the package
// documents: no 500, the security headers set, and a JSON body with an
// "error" for every error. The executor must still answer the read that
// follows.
func FuzzHandler(f *testing.F) {
	for _, s := range []struct{ method, target, host, ctype, site, body string }{
		{"GET", "/", "127.0.0.1", "", "", ""},
		{"GET", "/api/stats", "localhost:80", "", "", ""},
		{"GET", "/api/groups?limit=2", "127.0.0.1", "", "", ""},
		{"GET", "/api/groups/a/explain", "[::1]:8080", "", "", ""},
		{"GET", "/api/group?name=%00", "127.0.0.1", "", "", ""},
		{"GET", "/api/events", "127.0.0.1", "", "", ""},
		{"HEAD", "/api/events", "127.0.0.1", "", "", ""},
		{"GET", "/api/warnings", "evil.example", "", "", ""},
		{"PATCH", "/api/groups/a", "127.0.0.1", "application/json", "same-origin", `{"maxConcurrency":1,"paused":true}`},
		{"PATCH", "/api/groups/a", "127.0.0.1", "application/json", "same-origin", `{"weight":null,"queueThreshold":"unlimited"}`},
		{"PATCH", "/api/group?name=c", "127.0.0.1", "application/json; charset=utf-8", "same-origin", `{"maxInFlight":-1}`},
		{"POST", "/api/groups/b/shutdown", "127.0.0.1", "application/json", "same-origin", `{}`},
		{"POST", "/api/groups/c/evict", "127.0.0.1", "application/json", "cross-site", `{}`},
		{"POST", "/api/groups/zz/evict", "127.0.0.1", "application/json", "same-origin", `{"x":1}`},
		{"PATCH", "/api/groups/a", "127.0.0.1", "text/plain", "same-origin", `{"maxConcurrency":2}`},
		{"DELETE", "/api/groups/a", "127.0.0.1", "", "", ""},
		{"GET", "/api/../api/stats", "127.0.0.1", "", "", ""},
		{"PATCH", "/api/groups/a", "127.0.0.1", "application/json", "", `{"maxConcurrency":1e400}`},
	} {
		f.Add(s.method, s.target, s.host, s.ctype, s.site, []byte(s.body), byte(0))
		f.Add(s.method, s.target, s.host, s.ctype, s.site, []byte(s.body), byte(7))
		f.Add(s.method, s.target, s.host, s.ctype, s.site, []byte(s.body), byte(0x7f))
	}
	f.Fuzz(func(t *testing.T, method, target, host, ctype, site string, body []byte, opts byte) {
		req := fuzzRequest(method, target, host, body)
		if req == nil {
			return // net/http's server would not pass it on
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		o := httpgc.Options{Authorize: allowAll, AllowWrites: opts&1 != 0, Audit: func(httpgc.AuditEvent) {}}
		if opts&2 != 0 {
			o.DisplayKey = httpgc.HashKey([]byte("k"))
		}
		if opts&4 != 0 {
			o.History = -1
		}
		fx := newFixture(t, o)
		// A paused group's tasks wait through Shutdown: Close ends them.
		t.Cleanup(func() { fx.e.Close() })
		for i, w := range fuzzWrites {
			if opts&(8<<i) != 0 {
				serve(fx.h, request(w[0], w[1], w[2], "Content-Type", "application/json", "Sec-Fetch-Site", "same-origin"))
			}
		}
		checkAnswer(t, req, serveUntilFlushed(fx.h, req))
		after := get(fx.h, "/api/groups")
		if after.Code != http.StatusOK || !json.Valid(after.Body.Bytes()) {
			t.Fatalf("the read after %s %q: %d %s", method, target, after.Code, after.Body)
		}
	})
}

// fuzzWrites are writes FuzzHandler may make before its request, chosen
// by bits 3 to 6 of opts.
var fuzzWrites = [][3]string{
	{http.MethodPatch, "/api/groups/a", `{"paused":true}`},
	{http.MethodPatch, "/api/groups/c", `{"maxConcurrency":2,"weight":3}`},
	{http.MethodPost, "/api/groups/b/shutdown", `{}`},
	{http.MethodPost, "/api/groups/c/evict", `{}`},
}

// fuzzRequest builds a request as net/http's server would pass it to a
// handler, from a loopback client, or nil if the server would refuse it.
func fuzzRequest(method, target, host string, body []byte) *http.Request {
	if method == "" || strings.IndexFunc(method, notToken) >= 0 || strings.IndexFunc(host, notHostByte) >= 0 {
		return nil
	}
	u, err := url.ParseRequestURI(target)
	if err != nil || u.Host != "" || !strings.HasPrefix(target, "/") {
		return nil
	}
	return &http.Request{
		Method: method, URL: u, RequestURI: target, Host: host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		RemoteAddr: "127.0.0.1:50000",
	}
}

func notToken(r rune) bool {
	return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
}

func notHostByte(r rune) bool {
	return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"<>\^`+"`{|}", r)
}

// flushCanceller is a recorder whose request ends at its first flush, so
// that a stream sends its first snapshot and returns.
type flushCanceller struct {
	*httptest.ResponseRecorder
	cancel context.CancelFunc
}

func (w flushCanceller) Flush() {
	w.ResponseRecorder.Flush()
	w.cancel()
}

func serveUntilFlushed(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := flushCanceller{httptest.NewRecorder(), cancel}
	h.ServeHTTP(w, req.WithContext(ctx))
	return w.ResponseRecorder
}

// checkAnswer checks what every answer of the handler has.
func checkAnswer(t *testing.T, req *http.Request, w *httptest.ResponseRecorder) {
	t.Helper()
	what := req.Method + " " + req.RequestURI
	if w.Code < 200 || w.Code >= 500 && w.Code != http.StatusServiceUnavailable {
		t.Fatalf("%s: status %d: %s", what, w.Code, w.Body)
	}
	for _, k := range []string{"X-Content-Type-Options", "Cache-Control", "Referrer-Policy"} {
		if w.Header().Get(k) == "" {
			t.Errorf("%s: no %s header", what, k)
		}
	}
	ct := w.Header().Get("Content-Type")
	switch {
	case req.Method == http.MethodHead:
	case strings.HasPrefix(ct, "text/event-stream"), strings.HasPrefix(ct, "text/html"):
		if w.Code != http.StatusOK {
			t.Errorf("%s: %s with status %d", what, ct, w.Code)
		}
	case ct == "application/json":
		var v map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Fatalf("%s: %d, body not a JSON object: %v: %q", what, w.Code, err, w.Body)
		}
		if msg, _ := v["error"].(string); w.Code >= 300 && msg == "" {
			t.Errorf("%s: %d without an error: %s", what, w.Code, w.Body)
		}
	default:
		t.Errorf("%s: %d with Content-Type %q: %q", what, w.Code, ct, w.Body)
	}
}
