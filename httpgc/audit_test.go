package httpgc_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc/httpgc"
)

// audited returns a fixture with opts whose audit events are recorded.
func audited(t *testing.T, opts httpgc.Options) (*fixture, func() []httpgc.AuditEvent) {
	var mu sync.Mutex
	var events []httpgc.AuditEvent
	opts.Audit = func(ev httpgc.AuditEvent) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
	}
	f := newFixture(t, opts)
	return f, func() []httpgc.AuditEvent {
		mu.Lock()
		defer mu.Unlock()
		return append([]httpgc.AuditEvent(nil), events...)
	}
}

func TestARefusedWriteReachesAuditWithTheReason(t *testing.T) {
	onlyPatch := func(_ *http.Request, a httpgc.Action) bool { return a != httpgc.ActionShutdown }
	writes := httpgc.Options{AllowWrites: true, Authorize: onlyPatch}
	json := []string{"Content-Type", "application/json", "Sec-Fetch-Site", "same-origin"}
	hostile := func(r *http.Request) *http.Request { r.Host = "attacker.example"; return r }
	for _, tc := range []struct {
		name    string
		opts    httpgc.Options
		req     *http.Request
		action  httpgc.Action
		status  int
		refused string
	}{
		{"read-only", httpgc.Options{}, request(http.MethodPatch, "/api/groups/a", `{"paused":true}`, json...),
			httpgc.ActionPatch, 405, "read-only: writes are off (Options.AllowWrites)"},
		{"forbidden host", writes, hostile(request(http.MethodPost, "/api/groups/a/evict", `{}`, json...)),
			httpgc.ActionEvict, 403, `forbidden: host "attacker.example" is neither loopback nor in Options.AllowedHosts`},
		{"not loopback", httpgc.Options{}, from("192.0.2.1:4000", request(http.MethodPatch, "/api/group?group=a", `{}`, json...)),
			httpgc.ActionPatch, 403, "forbidden: only loopback clients are served without Options.Authorize"},
		{"unauthorized", writes, request(http.MethodPost, "/api/groups/a/shutdown", ``, json...),
			httpgc.ActionShutdown, 403, "forbidden: not authorized to shutdown"},
		{"cross-origin", writes, request(http.MethodPatch, "/api/groups/a", `{}`, "Content-Type", "application/json", "Sec-Fetch-Site", "cross-site"),
			httpgc.ActionPatch, 403, "forbidden: cross-origin write"},
		{"not JSON", writes, request(http.MethodPatch, "/api/groups/a", `{}`, "Sec-Fetch-Site", "same-origin"),
			httpgc.ActionPatch, 415, "unsupported media type: a write needs Content-Type: application/json"},
		{"bad JSON", writes, request(http.MethodPatch, "/api/groups/a", `{`, json...),
			httpgc.ActionPatch, 400, "malformed JSON: unexpected EOF"},
		{"invalid value", writes, request(http.MethodPatch, "/api/groups/a", `{"paused":1}`, json...),
			httpgc.ActionPatch, 422, `paused: got "1", want true, false or null`},
		{"unknown group", writes, request(http.MethodPatch, "/api/groups/nope", `{"paused":true}`, json...),
			httpgc.ActionPatch, 404, `no group "nope"`},
	} {
		f, events := audited(t, tc.opts)
		w := serve(f.h, tc.req)
		require.Equal(t, tc.status, w.Code, tc.name)
		got := events()
		require.Len(t, got, 1, tc.name)
		ev := got[0]
		assert.Equal(t, tc.action, ev.Action, tc.name)
		assert.Equal(t, tc.status, ev.Status, tc.name)
		assert.Equal(t, tc.refused, ev.Refused, tc.name)
		assert.Equal(t, object(t, w)["error"], ev.Refused, "%s: the answer's error", tc.name)
		assert.ErrorIs(t, ev.Err, httpgc.ErrRefused, tc.name)
		assert.Empty(t, ev.Group, tc.name)
		assert.False(t, ev.At.IsZero(), tc.name)
		want := "a"
		if tc.name == "unknown group" {
			want = "nope"
		}
		assert.Equal(t, want, ev.Name, tc.name)
	}
}

func TestReadsAndAppliedWritesAreAuditedAsBefore(t *testing.T) {
	f, events := audited(t, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	require.Equal(t, http.StatusOK, get(f.h, "/api/groups/a").Code)
	require.Equal(t, http.StatusNotFound, get(f.h, "/api/groups/nope").Code)
	assert.Empty(t, events(), "reads are not audited")
	require.Equal(t, http.StatusOK, patch(f.h, "/api/groups/a", `{"paused":true}`).Code)
	got := events()
	require.Len(t, got, 1)
	assert.Equal(t, http.StatusOK, got[0].Status)
	assert.Empty(t, got[0].Refused)
	assert.NoError(t, got[0].Err)
	assert.Equal(t, "a", got[0].Group)
	assert.Equal(t, "a", got[0].Name)
	assert.True(t, got[0].After.Paused)
	require.Equal(t, http.StatusOK, patch(f.h, "/api/groups/a", `{"paused":null}`).Code) // the fixture's gate can drain
}
