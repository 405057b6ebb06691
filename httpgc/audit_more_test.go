package httpgc_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc/httpgc"
)

// An AuditEvent's Name is the group as the request named it, cut to 200
// bytes. A name of exactly 200 bytes is whole, and a cut falls before a
// rune, never through it, so Name stays valid UTF-8.
func TestAnAuditedNameIsCutTo200BytesBeforeARune(t *testing.T) {
	f, events := audited(t, httpgc.Options{})
	for _, c := range []struct{ name, want string }{
		{strings.Repeat("a", 200), strings.Repeat("a", 200)},
		{strings.Repeat("a", 201), strings.Repeat("a", 200)},
		{strings.Repeat("a", 199) + "é", strings.Repeat("a", 199)},
		{strings.Repeat("a", 198) + "€", strings.Repeat("a", 198)},
		{strings.Repeat("a", 197) + "€", strings.Repeat("a", 197) + "€"},
		{strings.Repeat("a", 197) + "𝄞", strings.Repeat("a", 197)},
	} {
		n := len(events())
		w := serve(f.h, request(http.MethodPost, "/api/groups/"+url.PathEscape(c.name)+"/evict", "",
			"Content-Type", "application/json", "Sec-Fetch-Site", "same-origin"))
		require.Equal(t, http.StatusMethodNotAllowed, w.Code)
		got := events()
		require.Len(t, got, n+1)
		assert.Equal(t, c.want, got[n].Name, "a name of %d bytes", len(c.name))
	}
}

// A write refused for its Host is refused before any route is matched,
// and still audited with the name its URL gives, unescaped (none, for the
// query form without a group), and with Who as Options.Identify says.
func TestAWriteRefusedForItsHostIsAuditedWithItsNameAndWho(t *testing.T) {
	f, events := audited(t, httpgc.Options{AllowWrites: true, Authorize: allowAll,
		Identify: func(r *http.Request) string { return "who:" + r.Header.Get("X-User") }})
	for target, want := range map[string]string{
		"/api/groups/a%2Fb/evict":     "a/b",
		"/api/groups/x%20y":           "x y",
		"/api/group/shutdown?group=q": "q",
		"/api/group/evict":            "",
	} {
		method := http.MethodPost
		if !strings.Contains(target, "/evict") && !strings.Contains(target, "/shutdown") {
			method = http.MethodPatch
		}
		r := request(method, target, `{}`, "Content-Type", "application/json", "Sec-Fetch-Site", "same-origin", "X-User", "mallory")
		r.Host = "attacker.example"
		n := len(events())
		require.Equal(t, http.StatusForbidden, serve(f.h, r).Code, target)
		got := events()
		require.Len(t, got, n+1, target)
		assert.Equal(t, want, got[n].Name, target)
		assert.Equal(t, "who:mallory", got[n].Who, target)
		assert.ErrorIs(t, got[n].Err, httpgc.ErrRefused, target)
	}
}
