package httpgc_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc/httpgc"
)

// A request no route takes gets its error in JSON, as every other answer
// of the API: the page shows a failed request's error text.
func TestARequestNoRouteTakesGetsItsErrorInJSON(t *testing.T) {
	f := newFixture(t, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	t.Cleanup(f.gate.Release)
	for _, tc := range []struct {
		method, target string
		code           int
		allow, want    string
	}{
		{http.MethodPut, "/api/groups/a", http.StatusMethodNotAllowed, "GET, HEAD, PATCH", `method "PUT" not allowed here`},
		{http.MethodGet, "/api/groups/a/evict", http.StatusMethodNotAllowed, "POST", `method "GET" not allowed here`},
		{http.MethodGet, "/api/nothing", http.StatusNotFound, "", `no endpoint "/api/nothing"`},
		{http.MethodPatch, "/api/groups/", http.StatusNotFound, "", "not found"},
	} {
		w := serve(f.h, request(tc.method, tc.target, "", "Sec-Fetch-Site", "same-origin"))
		assert.Equal(t, tc.code, w.Code, "%s %s", tc.method, tc.target)
		assert.Equal(t, "application/json", w.Header().Get("Content-Type"), "%s %s", tc.method, tc.target)
		assert.Contains(t, object(t, w)["error"], tc.want, "%s %s", tc.method, tc.target)
		if tc.allow != "" {
			assert.Equal(t, tc.allow, w.Header().Get("Allow"), "%s %s", tc.method, tc.target)
		}
	}
}
