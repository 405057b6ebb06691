package httpgc_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
)

// trustLoopback is the Authorize examples/dashboard installs: any client
// on this machine may do anything.
func trustLoopback(r *http.Request, _ httpgc.Action) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// send makes a request to srv as a browser's fetch from the page at
// origin would: its Host and Origin are origin's, and it is same-origin.
func send(t *testing.T, srv *httptest.Server, origin, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Host = strings.TrimPrefix(origin, "http://")
	req.Header.Set("Origin", origin)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestAPageThatRebindsItsNameToLoopbackIsRefused(t *testing.T) {
	const attacker = "http://attacker.example:8080"
	for name, opts := range map[string]httpgc.Options{
		"read-only, no Authorize":             {},
		"writes, an Authorize trusting local": {AllowWrites: true, Authorize: trustLoopback},
		"writes, an Authorize granting all":   {AllowWrites: true, Authorize: allowAll},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, opts)
			srv := httptest.NewServer(f.h)
			t.Cleanup(srv.Close)
			for _, rq := range []struct{ method, path, body string }{
				{"GET", "/", ""},
				{"GET", "/api/stats", ""},
				{"GET", "/api/groups", ""},
				{"GET", "/api/groups/a", ""},
				{"GET", "/api/group?group=a", ""},
				{"GET", "/api/groups/a/explain", ""},
				{"GET", "/api/warnings", ""},
				{"GET", "/api/events", ""},
				{"PATCH", "/api/groups/a", `{"maxConcurrency":1}`},
				{"PATCH", "/api/group?group=a", `{"maxConcurrency":1}`},
				{"POST", "/api/groups/a/shutdown", ""},
				{"POST", "/api/groups/a/evict", ""},
			} {
				code, body := send(t, srv, attacker, rq.method, rq.path, rq.body)
				assert.Equal(t, http.StatusForbidden, code, "%s %s: %s", rq.method, rq.path, body)
				assert.Contains(t, body, `host \"attacker.example:8080\"`, "%s %s", rq.method, rq.path)
			}
			st, ok := f.e.GroupStats("a")
			require.True(t, ok, "group a is still there")
			assert.Equal(t, 2, st.MaxConcurrency, "group a's limit is unchanged")
			assert.Equal(t, 2, st.Running, "group a's tasks still run")

			// The same requests from the page at the real address work.
			local := "http://" + srv.Listener.Addr().String()
			code, body := send(t, srv, local, "GET", "/api/group?group=a", "")
			assert.Equal(t, http.StatusOK, code, body)
			if opts.AllowWrites {
				code, body = send(t, srv, local, "PATCH", "/api/group?group=a", `{"maxConcurrency":3}`)
				assert.Equal(t, http.StatusOK, code, body)
			}
		})
	}
}

func TestOnlyLoopbackAndAllowedHostsAreServed(t *testing.T) {
	f := newFixture(t, httpgc.Options{Authorize: allowAll, AllowedHosts: []string{"dash.example.com", "[2001:db8::1]", "10.0.0.7."}})
	for host, want := range map[string]bool{
		"localhost": true, "localhost:8080": true, "LocalHost:8080": true, "localhost.": true, "localhost.:80": true,
		"127.0.0.1": true, "127.0.0.1:1": true, "127.1.2.3": true, "127.255.255.254:65535": true,
		"[::1]": true, "[::1]:8080": true, "[0:0:0:0:0:0:0:1]:80": true, "[::ffff:127.0.0.1]:80": true,
		"127.0.0.1:": true, "localhost:0080": true,

		"dash.example.com": true, "DASH.Example.COM.:443": true, "dash.example.com:8443": true,
		"[2001:db8::1]:443": true, "[2001:DB8:0::1]": true, "10.0.0.7:8080": true, "10.0.0.7": true,

		"": false, "attacker.example": false, "attacker.example:8080": false,
		"localhost.attacker.example": false, "127.0.0.1.attacker.example": false, "sub.dash.example.com": false,
		"example.com": false, "dash.example.com.evil": false, "localhost..": false, "local host": false,
		"::1": false, "[::1": false, "::1]:80": false, "[127.0.0.1]": false, "[::1]x": false, "[::1]:x": false,
		"128.0.0.1": false, "0.0.0.0": false, "[::]:80": false, "10.0.0.8": false, "[2001:db8::2]": false,
		"127.1": false, "2130706433": false, "0x7f000001": false, "127.0.0.1:http": false, "127.0.0.1:80:80": false,
		"user@localhost": false, "localhost/x": false, "localhost:99999": false, "*": false, ":80": false,
		"\x00localhost": false, "localhost\n": false, strings.Repeat("a", 4096): false,
	} {
		r := request("GET", "/api/stats", "")
		r.Host = host
		w := serve(f.h, r)
		if want {
			assert.Equal(t, http.StatusOK, w.Code, "Host %q: %s", host, w.Body)
			continue
		}
		if assert.Equal(t, http.StatusForbidden, w.Code, "Host %q", host) {
			msg := object(t, w)["error"].(string)
			assert.Contains(t, msg, "host ", "Host %q", host)
			assert.LessOrEqual(t, len(msg), 300, "Host %q: the message is cut", host)
		}
	}
}

func TestAHostIsCheckedWhateverAuthorizeSays(t *testing.T) {
	asked := 0
	f := newFixture(t, httpgc.Options{AllowWrites: true, Authorize: func(*http.Request, httpgc.Action) bool {
		asked++
		return true
	}})
	r := request("PATCH", "/api/groups/a", `{"maxConcurrency":1}`, "Content-Type", "application/json")
	r.Host = "attacker.example"
	assert.Equal(t, http.StatusForbidden, serve(f.h, r).Code)
	assert.Zero(t, asked, "Authorize is not asked about a refused host")
}

func TestNewRefusesAnAllowedHostItCannotMatch(t *testing.T) {
	e := groupconc.New(nil)
	t.Cleanup(func() { e.Close() })
	for _, bad := range []string{"", ".", "dash.example.com:443", "http://dash.example.com", "dash.example.com/x",
		"*", "*.example.com", "dash example.com", "[::1", "[dash.example.com]", "dash..example.com", "dásh.example.com"} {
		_, err := httpgc.New(e, httpgc.Options{AllowedHosts: []string{"ok.example.com", bad}})
		if assert.Error(t, err, "%q", bad) {
			assert.Contains(t, err.Error(), "AllowedHosts[1]", "%q", bad)
		}
	}
	for _, good := range []string{"dash.example.com", "Dash.Example.com.", "10.0.0.7", "2001:db8::1", "[2001:db8::1]", "my_host"} {
		h, err := httpgc.New(e, httpgc.Options{AllowedHosts: []string{good}})
		if assert.NoError(t, err, "%q", good) {
			h.Close()
		}
	}
}
