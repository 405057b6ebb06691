package httpgc_test

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// fixture is an executor with three groups held still by a gate, and a
// handler for it:
//
//	a: concurrency 2 (per-group map), 2 running, 1 waiting
//	b: concurrency 1 (builtin), 1 running
//	c: concurrency 1 (builtin), 1 running, 1 waiting (after a's)
//
// Every group's queue threshold is 10 (default), its bulkhead unlimited
// (builtin), its weight 1 (builtin). tasks are the handles in submission
// order: a, a, b, a (waiting), c, c (waiting).
type fixture struct {
	e     *groupconc.GroupExecutor
	h     *httpgc.Handler
	gate  *adaptertest.Gate
	tasks []*groupconc.TaskHandle[int]
}

func newFixture(t *testing.T, opts httpgc.Options) *fixture {
	t.Helper()
	return buildFixture(t, opts, func() {})
}

// newAgedFixture is newFixture with a second between a's tasks and c's,
// and one after, so that a's oldest wait is 2s and c's 1s: in a synctest
// bubble only, where the seconds are fake. (Without it the two waits differ
// by microseconds, less than the time between reading the two groups.)
func newAgedFixture(t *testing.T, opts httpgc.Options) *fixture {
	t.Helper()
	return buildFixture(t, opts, func() { time.Sleep(time.Second) })
}

func buildFixture(t *testing.T, opts httpgc.Options, pause func()) *fixture {
	t.Helper()
	e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().
		PerGroupMaxConcurrency(map[string]int{"a": 2}).
		DefaultQueueThresholdPerGroup(10).
		GlobalMaxInFlight(64))
	f := &fixture{e: e, gate: adaptertest.NewGate(t)}
	for i, key := range []string{"a", "a", "b", "a", "c", "c"} {
		if i == 4 {
			pause()
		}
		f.tasks = append(f.tasks, adaptertest.Submit(t, e, key, f.gate.Task))
	}
	pause()
	f.gate.WaitStarted(4)
	h, err := httpgc.New(e, opts)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	f.h = h
	return f
}

// allowAll is an Authorize that grants everything.
func allowAll(*http.Request, httpgc.Action) bool { return true }

// request builds a request from a loopback address to a loopback host, as
// a local browser's.
func request(method, target, body string, header ...string) *http.Request {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, r)
	req.RemoteAddr = "127.0.0.1:50000"
	req.Host = "127.0.0.1:8080"
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// serve runs req through h.
func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// get serves a GET of target from a loopback address.
func get(h http.Handler, target string) *httptest.ResponseRecorder {
	return serve(h, request(http.MethodGet, target, ""))
}

// patch serves a same-origin JSON PATCH of target.
func patch(h http.Handler, target, body string) *httptest.ResponseRecorder {
	return serve(h, request(http.MethodPatch, target, body, "Content-Type", "application/json", "Sec-Fetch-Site", "same-origin"))
}

// post serves a same-origin JSON POST of target.
func post(h http.Handler, target, body string) *httptest.ResponseRecorder {
	return serve(h, request(http.MethodPost, target, body, "Content-Type", "application/json", "Sec-Fetch-Site", "same-origin"))
}

// object decodes a JSON object.
func object(t *testing.T, w *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &m), "body: %s", w.Body)
	return m
}

func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// rowKeys are the fields of a row, sorted.
var rowKeys = []string{"blocked", "cancelled", "failed", "group", "history", "hung", "inFlight", "maxConcurrency", "maxInFlight", "oldestRunningMs",
	"oldestWaitMs", "parent", "paused", "queueThreshold", "recent", "rejected", "running", "runningCost", "source", "succeeded", "waiting",
	"waitingGlobal", "weight", "why"}

// groupNames returns the "group" of each row of a groups body.
func groupNames(t *testing.T, body map[string]any) []string {
	t.Helper()
	var names []string
	for _, r := range body["groups"].([]any) {
		names = append(names, r.(map[string]any)["group"].(string))
	}
	return names
}
