package httpgc_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc/httpgc"
)

// A RemoteAddr may come without a port, as some middleware sets it to the
// client's address alone. Without Authorize a loopback address is still
// served so, in any of its forms, and any other address is still refused.
func TestALoopbackClientWhoseAddressHasNoPortIsServed(t *testing.T) {
	f := newFixture(t, httpgc.Options{})
	for addr, want := range map[string]int{
		"127.0.0.1": http.StatusOK, "127.0.0.2": http.StatusOK, "::1": http.StatusOK, "::ffff:127.0.0.1": http.StatusOK,
		"192.0.2.1": http.StatusForbidden, "2001:db8::1": http.StatusForbidden, "::ffff:192.0.2.1": http.StatusForbidden,
	} {
		assert.Equal(t, want, serve(f.h, from(addr, request(http.MethodGet, "/api/stats", ""))).Code, "RemoteAddr %q", addr)
	}
}
