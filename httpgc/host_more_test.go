package httpgc_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// An AllowedHosts entry is a host without a port, and a Host header never
// carries a zone. So New refuses a bracketed IPv6 address with a port or
// anything after its bracket, and an address with a zone, since no Host
// could match them. A bracketed entry is checked as a whole, not by its
// first character alone.
func TestNewRefusesAnAllowedIPv6HostWithAPortOrAZone(t *testing.T) {
	e := groupconc.New(nil)
	t.Cleanup(func() { e.Close() })
	for _, bad := range []string{"[2001:db8::1]:443", "[::1]:80", "[2001:db8::1]x]", "[::1]:]",
		"fe80::1%eth0", "[fe80::1%eth0]", "10.0.0.7%eth0"} {
		_, err := httpgc.New(e, httpgc.Options{AllowedHosts: []string{"ok.example.com", bad}})
		if assert.Error(t, err, "%q", bad) {
			assert.Contains(t, err.Error(), "AllowedHosts[1]", "%q", bad)
		}
	}
}

// A DNS name is at most 253 bytes, without its trailing dot, in labels of
// at most 63. An AllowedHosts entry longer than that is refused by New,
// and a Host longer than that gets 403, even when each label is short.
// Names up to the limits are served.
func TestANameBeyondDNSLimitsIsNeitherAllowedNorServed(t *testing.T) {
	label63 := strings.Repeat("b", 63)
	long253 := strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("c", 61)
	require.Len(t, long253, 253)
	f := newFixture(t, httpgc.Options{Authorize: allowAll, AllowedHosts: []string{long253 + ".", label63 + ".example"}})
	for host, want := range map[string]int{
		long253: http.StatusOK, long253 + ".:80": http.StatusOK, strings.ToUpper(long253): http.StatusOK,
		label63 + ".example:8080": http.StatusOK,
		long253 + "c":             http.StatusForbidden, "c" + long253: http.StatusForbidden,
		strings.Repeat("a.", 127) + "a": http.StatusForbidden, // 255 bytes, labels of one
		label63 + "b.example":           http.StatusForbidden,
		strings.Repeat("a", 64):         http.StatusForbidden,
	} {
		r := request("GET", "/api/stats", "")
		r.Host = host
		assert.Equal(t, want, serve(f.h, r).Code, "Host of %d bytes", len(host))
	}

	e := groupconc.New(nil)
	t.Cleanup(func() { e.Close() })
	for _, bad := range []string{long253 + "c", strings.Repeat("a.", 127) + "a", label63 + "b.example", strings.Repeat("a", 64)} {
		_, err := httpgc.New(e, httpgc.Options{AllowedHosts: []string{bad}})
		assert.Error(t, err, "an entry of %d bytes", len(bad))
	}
}

// A label holds letters, digits, '-' and '_', the first and last of each
// range included. An entry with them all is allowed, and matches its Host
// in any case.
func TestAHostNameMayHoldEveryCharacterADNSLabelMay(t *testing.T) {
	f := newFixture(t, httpgc.Options{Authorize: allowAll, AllowedHosts: []string{"az-09_x.example"}})
	for host, want := range map[string]int{
		"az-09_x.example": http.StatusOK, "AZ-09_X.Example:443": http.StatusOK,
		"az-09_y.example": http.StatusForbidden, "az-09.x.example": http.StatusForbidden,
	} {
		r := request("GET", "/api/stats", "")
		r.Host = host
		assert.Equal(t, want, serve(f.h, r).Code, "Host %q", host)
	}
}

// An IPv4 address and its IPv4-mapped IPv6 form name one host, so either
// form of an entry matches either form of a Host. A Host with an IPv6 zone
// names no host, loopback's included.
func TestAnAllowedIPv4HostMatchesItsMappedForm(t *testing.T) {
	for _, entry := range []string{"10.0.0.7", "[::ffff:10.0.0.7]", "::ffff:10.0.0.7"} {
		f := newFixture(t, httpgc.Options{Authorize: allowAll, AllowedHosts: []string{entry}})
		for host, want := range map[string]int{
			"10.0.0.7": http.StatusOK, "[::ffff:10.0.0.7]:80": http.StatusOK, "[::ffff:a00:7]": http.StatusOK,
			"10.0.0.8": http.StatusForbidden, "[::ffff:10.0.0.8]": http.StatusForbidden,
			"[::1%eth0]:80": http.StatusForbidden, "[::1%25eth0]": http.StatusForbidden,
		} {
			r := request("GET", "/api/stats", "")
			r.Host = host
			assert.Equal(t, want, serve(f.h, r).Code, "entry %q, Host %q", entry, host)
		}
	}
}

// An error repeats a request's input quoted and cut to 200 bytes, with an
// ellipsis after the quote when cut. Input of exactly 200 bytes is whole,
// and a cut falls before a rune, never through it, so no broken byte is
// shown.
func TestAnErrorCutsTheInputItRepeatsBeforeARune(t *testing.T) {
	f := newFixture(t, httpgc.Options{})
	for _, c := range []struct{ host, shown string }{
		{strings.Repeat("a", 200), `"` + strings.Repeat("a", 200) + `" `},
		{strings.Repeat("a", 201), `"` + strings.Repeat("a", 200) + `"… `},
		{strings.Repeat("a", 199) + "é", `"` + strings.Repeat("a", 199) + `"… `},
		{strings.Repeat("a", 198) + "€", `"` + strings.Repeat("a", 198) + `"… `},
		{strings.Repeat("a", 197) + "€", `"` + strings.Repeat("a", 197) + `€" `},
		{strings.Repeat("a", 197) + "𝄞", `"` + strings.Repeat("a", 197) + `"… `},
	} {
		r := request("GET", "/api/stats", "")
		r.Host = c.host
		w := serve(f.h, r)
		require.Equal(t, http.StatusForbidden, w.Code)
		msg := object(t, w)["error"].(string)
		assert.Contains(t, msg, "host "+c.shown, "Host of %d bytes", len(c.host))
		assert.NotContains(t, msg, `\x`, "Host of %d bytes", len(c.host))
	}
}

// A refusal that repeats a key as it is, with a byte that is not UTF-8,
// shows that byte escaped as strconv.Quote writes it (\xff), not turned
// into a U+FFFD that hides which byte it was. Spaces, quotes and
// backslashes stay as they are.
func TestARefusalShowsAKeysBadBytesEscaped(t *testing.T) {
	key := "acme\xff x"
	e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder())
	remove, err := e.GuardOverrides(func(g string, _ groupconc.GroupOverride) error {
		return fmt.Errorf(`group "%s" runs at most 4 tasks (see a\b)`, g)
	})
	require.NoError(t, err)
	t.Cleanup(remove)
	adaptertest.Submit(t, e, key, adaptertest.OK).Wait()
	h, err := httpgc.New(e, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })

	// The page names the group as it is shown, its bad byte a U+FFFD.
	w := patch(h, "/api/group?group="+url.QueryEscape("acme\uFFFD x"), `{"maxConcurrency":9}`)
	require.Equal(t, http.StatusConflict, w.Code, w.Body.String())
	assert.Equal(t, `group "acme\xff x" runs at most 4 tasks (see a\b)`, object(t, w)["error"])
}
