package httplimit_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// HeaderKey takes the first value of its header, in any case of the
// name, and the fallback for a request without it. A header sent empty is
// no key: the request goes to the fallback, not to the group "".
func TestHeaderKeyFallsBackForAMissingOrEmptyHeader(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string // the X-Tenant values sent, nil for none
		want   string
	}{
		{"no header", nil, "anonymous"},
		{"empty", []string{""}, "anonymous"},
		{"a tenant", []string{"acme"}, "acme"},
		{"the first of two", []string{"acme", "globex"}, "acme"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		for _, v := range tc.values {
			r.Header.Add("X-Tenant", v)
		}
		assert.Equal(t, tc.want, httplimit.HeaderKey("x-TENANT", "anonymous")(r), tc.name)
	}
}

// The default key of a request with an empty path, as a proxy's
// absolute-form "GET http://host HTTP/1.1" has, is "/": the request runs
// in the group "/", not with 400 for an empty key.
func TestARequestWithAnEmptyPathRunsInTheGroupSlash(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
	h := httplimit.Handler(e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), httplimit.ServerOptions{})
	r := httptest.NewRequest(http.MethodGet, "http://example.com", nil)
	assert.Equal(t, "", r.URL.Path)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	assert.Equal(t, http.StatusOK, w.Code)
	st, ok := e.GroupStats("/")
	assert.True(t, ok && st.Succeeded == 1, "the request ran in the group /")
}

// WriteError sets Retry-After on a 429 and a 503 only, and leaves it out,
// not sent empty, for a negative retryAfter.
func TestWriteErrorSetsRetryAfterOnlyOnA429OrA503(t *testing.T) {
	rejected := &groupconc.RejectedError{Reason: groupconc.ReasonGroupQueueFull}
	for _, tc := range []struct {
		err        error
		retryAfter time.Duration
		code       int
		header     []string // the Retry-After values written
	}{
		{rejected, 2 * time.Second, 429, []string{"2"}},
		{groupconc.ErrClosed, 0, 503, []string{"1"}},
		{rejected, -1, 429, nil},
		{groupconc.ErrClosed, -time.Second, 503, nil},
		{httplimit.ErrNoKey, time.Second, 400, nil},
		{errors.New("other"), time.Second, 500, nil},
	} {
		w := httptest.NewRecorder()
		httplimit.WriteError(w, tc.err, tc.retryAfter)
		assert.Equal(t, tc.code, w.Code, "%v", tc.err)
		assert.Equal(t, tc.header, w.Header().Values("Retry-After"), "%v, RetryAfter %v", tc.err, tc.retryAfter)
		body := http.StatusText(tc.code)
		if tc.code == http.StatusBadRequest {
			body += ": " + tc.err.Error() // a 400 says what is wrong
		}
		assert.Equal(t, body+"\n", w.Body.String())
	}
}

// A request whose key func returns "" is answered with ErrNoKey, before
// groupconc sees it: the ErrorHandler is called once, with ErrNoKey, and
// the handler never runs.
func TestAnEmptyKeyGoesToTheErrorHandlerAsErrNoKey(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
	var errs []error
	h := httplimit.Handler(e, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("the handler ran") }), httplimit.ServerOptions{
		Key: httplimit.HeaderKey("X-Tenant", ""),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			errs = append(errs, err)
			httplimit.WriteError(w, err, 0)
		},
	})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, http.StatusBadRequest, w.Code)
	require.Len(t, errs, 1, "the ErrorHandler's calls")
	assert.Same(t, httplimit.ErrNoKey, errs[0])
}
