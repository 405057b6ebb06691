package httplimit_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kobe/groupconc/httplimit"
)

// FuzzHostKey checks HostKey on any URL: a key is its own key (the
// canonical form is canonical), and the case of the host changes nothing,
// but for an IPv6 zone's.
func FuzzHostKey(f *testing.F) {
	for _, s := range []string{
		"http://example.com/", "https://EXAMPLE.com.:0443/", "http://127.1/", "http://0x7f.0.0.1:8080/",
		"http://[::ffff:10.0.0.1]/", "http://[fe80::1%25eth0]:80/", "http://2130706433/", "ftp://h/",
		"http://a.b.c.d.e/", "http://0x/", "http://08.0.0.1/", "https://[0:0::1]:00443/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		key := httplimit.HostKey(&http.Request{URL: u})
		if key == "" {
			return
		}
		if strings.HasSuffix(strings.TrimSuffix(u.Hostname(), "."), ".") {
			return // one trailing dot is dropped, not two
		}
		again := httplimit.HostKey(&http.Request{URL: &url.URL{Scheme: u.Scheme, Host: key}})
		if again != key {
			t.Errorf("HostKey(%q) = %q, whose own key is %q", raw, key, again)
		}
		upper := *u
		host, zone, _ := strings.Cut(u.Host, "%") // a zone keeps its case
		upper.Host = strings.ToUpper(host)
		if zone != "" {
			upper.Host += "%" + zone
		}
		if k := httplimit.HostKey(&http.Request{URL: &upper}); k != key {
			t.Errorf("HostKey(%q) = %q, and in upper case %q", raw, key, k)
		}
	})
}
