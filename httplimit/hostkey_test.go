package httplimit_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

func hostKeyOf(t *testing.T, rawURL string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	require.NoError(t, err)
	return httplimit.HostKey(req)
}

// Spellings of one host are one group, or a caller who writes the URLs
// gets past the per-host limit.
func TestHostKeyGivesSpellingsOfOneHostOneKey(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"http://EXAMPLE.Com/", "http://example.com/", "example.com:80"},
		{"http://example.com/", "http://example.com:80/", "example.com:80"},
		{"https://example.com/", "https://example.com:443/", "example.com:443"},
		{"http://example.com:/", "http://example.com/", "example.com:80"},
		{"http://example.com:0080/", "http://example.com:80/", "example.com:80"},
		{"http://example.com./", "http://example.com/", "example.com:80"},
		{"https://Example.COM.:8443/", "https://example.com:8443/", "example.com:8443"},
		{"http://127.0.0.1./", "http://127.0.0.1/", "127.0.0.1:80"},
		{"http://[0:0::1]/", "http://[::1]/", "[::1]:80"},
		{"http://[0000:0000:0000:0000:0000:0000:0000:0001]:8080/", "http://[::1]:8080/", "[::1]:8080"},
		{"http://[::ffff:127.0.0.1]/", "http://127.0.0.1/", "127.0.0.1:80"},
		{"http://[::FFFF:7f00:1]:8080/", "http://127.0.0.1:8080/", "127.0.0.1:8080"},
		{"http://[2001:DB8:0:0::1]/", "http://[2001:db8::1]/", "[2001:db8::1]:80"},
		{"http://[FE80::0:1%25eth0]/", "http://[fe80::1%25eth0]/", "[fe80::1%eth0]:80"},
		{"ftp://[0:0::1]", "ftp://[::1]", "[::1]"},
		{"ftp://Example.com.", "ftp://example.com", "example.com"},
		{"http://XN--BCHER-KVA.example/", "http://xn--bcher-kva.example/", "xn--bcher-kva.example:80"},
		// The numbers of inet_aton, which a resolver of the C library dials.
		{"http://127.1/", "http://127.0.0.1/", "127.0.0.1:80"},
		{"http://2130706433/", "http://0x7f.0.0.1/", "127.0.0.1:80"},
		{"http://127.000.000.001/", "http://0177.0.0.01/", "127.0.0.1:80"},
		{"http://10.1.65535/", "http://0xA.1.0xFFFF/", "10.1.255.255:80"},
		{"http://0x7F000001./", "http://127.0.0.1/", "127.0.0.1:80"},
		{"http://1.2.772/", "http://1.2.3.4/", "1.2.3.4:80"},
		{"http://4294967295/", "http://0XFF.0xff.0377.255/", "255.255.255.255:80"},
		{"http://0x.0x.0x.1/", "http://0.0.0.1/", "0.0.0.1:80"}, // "0x" alone is 0
		// More than four labels make a name, and so does a number past its byte.
		{"http://A.B.C.D.Example/", "http://a.b.c.d.example/", "a.b.c.d.example:80"},
		{"http://256.0.0.1./", "http://256.0.0.1/", "256.0.0.1:80"},
		{"http://h:040000/", "http://h:40000/", "h:40000"},
		{"http://a./", "http://a/", "a:80"},
		{"http://./", "http://./", ".:80"}, // a lone dot stays
	} {
		assert.Equal(t, tc.want, hostKeyOf(t, tc.a), tc.a)
		assert.Equal(t, tc.want, hostKeyOf(t, tc.b), tc.b)
	}
}

func TestHostKeyKeepsDifferentHostsApart(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"http://example.com/", "http://example.com:8080/"},
		{"http://example.com/", "https://example.com/"},
		{"http://example.com/", "http://www.example.com/"},
		{"http://[fe80::1%25eth0]/", "http://[fe80::1%25eth1]/"},
		{"http://[fe80::1%25eth0]/", "http://[fe80::1%25ETH0]/"}, // interface names are case-sensitive
		{"http://127.0.0.1/", "http://127.0.0.2/"},
		{"http://256.0.0.1/", "http://0.0.0.1/"},     // not an address: a name
		{"http://1.2.3.4.5/", "http://1.2.3.45/"},    // five numbers: a name
		{"http://1.2.3.4.0/", "http://1.2.3.4/"},     // five numbers: a name
		{"http://1.2.3.4.5/", "http://1.2.3.4.6/"},   // five numbers: two names
		{"http://1.2.0.256/", "http://1.2.1.0/"},     // a last number past its byte: a name
		{"http://4294967296/", "http://0.0.0.0/"},    // past 32 bits: a name
		{"http://08.0.0.1/", "http://8.0.0.1/"},      // 8 is no octal digit: a name
		{"http://0xg.0.0.1/", "http://0.0.0.1/"},     // g is no hex digit: a name
		{"http://example.1/", "http://example.0x1/"}, // names that end in numbers
	} {
		assert.NotEqual(t, hostKeyOf(t, tc.a), hostKeyOf(t, tc.b), "%s and %s", tc.a, tc.b)
	}
}

// A host that is not all ASCII is one host to http.Transport with its
// IDNA form, which HostKey cannot compute. So it has no key.
func TestHostKeyRefusesAHostThatIsNotASCII(t *testing.T) {
	for _, rawURL := range []string{
		"http://ｌｏｃａｌｈｏｓｔ/",
		"http://ｌｏｃａｌｈｏｓｔ:8080/",
		"http://bücher.example/",
		"https://BÜCHER.example:443/",
		"http://b%C3%BCcher.example/",
		"http://localhost\u3002/", // an ideographic full stop, which IDNA maps to "."
		"http://example.com\u200b/",
		"http://%80.example/", // a lone byte past ASCII, first in the host
	} {
		assert.Equal(t, "", hostKeyOf(t, rawURL), rawURL)
	}
	req, err := http.NewRequest(http.MethodGet, "http://example.com/", nil)
	require.NoError(t, err)
	req.URL.Host = "example.com:８０" // set by hand: no parse checked the port
	assert.Equal(t, "", httplimit.HostKey(req), req.URL.Host)
	req.URL.Host = ""
	assert.Equal(t, "", httplimit.HostKey(req), "no host")
}

func TestTheTransportDoesNotSendARequestWhoseHostIsNotASCII(t *testing.T) {
	rec := newRecorder()
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), rec)
	var hits atomic.Int64
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	tr := &httplimit.Transport{Base: base, Executor: e}
	port := hostOf(t, srv.URL)[strings.LastIndexByte(hostOf(t, srv.URL), ':')+1:]
	for _, host := range []string{"ｌｏｃａｌｈｏｓｔ", "ＬＯＣＡＬＨＯＳＴ", "１２７.０.０.１"} {
		rawURL := "http://" + host + ":" + port + "/"

		body := &closeRecorder{Reader: strings.NewReader("payload")}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, rawURL, body)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		require.Error(t, err, rawURL)
		assert.Nil(t, resp, rawURL)
		assert.ErrorIs(t, err, httplimit.ErrHostNotASCII, rawURL)
		assert.NotErrorIs(t, err, httplimit.ErrNoKey, rawURL)
		var ns *httplimit.NotSentError
		require.ErrorAs(t, err, &ns, rawURL)
		assert.Equal(t, "", ns.Key, rawURL)
		assert.True(t, body.closed.Load(), "%s: the request body is closed", rawURL)

		// Through a client, errors.Is and errors.As see through its *url.Error.
		c := &http.Client{Transport: tr}
		got := get(t.Context(), c, rawURL)
		var ue *url.Error
		require.True(t, errors.As(got.err, &ue), "%s: %v", rawURL, got.err)
		assert.ErrorIs(t, got.err, httplimit.ErrHostNotASCII, rawURL)
		assert.ErrorAs(t, got.err, &ns, rawURL)
	}
	assert.Zero(t, hits.Load(), "no request reached the server")
	assert.Empty(t, rec.submitted, "no request was submitted to the executor")
	assert.Zero(t, e.Stats().Running)

	// The server is there: its ASCII name reaches it, through one group.
	assert.Equal(t, 200, get(t.Context(), &http.Client{Transport: tr}, srv.URL).code)
	assert.Equal(t, int64(1), hits.Load())
	rec.waitSubmitted(t, 1)
}

// A Key of the caller's own is the way out: the Transport then sends a
// request whose host is not ASCII.
func TestAKeyFuncSendsARequestWhoseHostIsNotASCII(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
	var sent atomic.Int64
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sent.Add(1)
		return &http.Response{StatusCode: 204, Body: http.NoBody, Request: r}, nil
	})
	tr := &httplimit.Transport{Base: base, Executor: e, Key: func(r *http.Request) string { return "books" }}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://bücher.example/", nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 204, resp.StatusCode)
	assert.Equal(t, int64(1), sent.Load())
	_, ok := e.GroupStats("books")
	assert.True(t, ok, "the call ran in the group books")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
