package httplimit_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// errTorn is the error of a body whose connection broke.
var errTorn = errors.New("connection torn")

// Once a body's Close returns, or its Read has returned io.EOF or an
// error, the call's permits are back: its task has ended, and its
// OnCompleted, held here on a channel, has returned. A read error is the
// task's error. It runs in a synctest bubble, with a Base that sends
// nothing, so that "has not returned yet" is a fact.
func TestTheBodyGivesThePermitsBackBeforeItReturns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		body   io.Reader
		end    func(io.ReadCloser) error // what the caller does with the body
		status groupconc.TaskStatus
		err    error // the task's error
	}{
		{"close", strings.NewReader("body"), func(b io.ReadCloser) error { return b.Close() }, groupconc.StatusSuccess, nil},
		{"read to io.EOF", strings.NewReader("body"), func(b io.ReadCloser) error { _, err := io.ReadAll(b); return err }, groupconc.StatusSuccess, nil},
		{"read error", iotest.ErrReader(errTorn), func(b io.ReadCloser) error { _, err := b.Read(make([]byte, 8)); return err }, groupconc.StatusFailed, errTorn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				completed := make(chan groupconc.GroupResult[any])
				e := newExecutor(t, groupconc.NewPolicyBuilder().TaskLifecycleListener(groupconc.ListenerFuncs{
					Completed: func(_, _ string, res groupconc.GroupResult[any]) { completed <- res },
				}), nil)
				c := &http.Client{Transport: &httplimit.Transport{Executor: e, Base: roundTripperFunc(func(r *http.Request) (*http.Response, error) {
					return &http.Response{StatusCode: http.StatusOK, ContentLength: -1, Body: io.NopCloser(tc.body), Request: r}, nil
				})}}
				resp, err := c.Get("http://example.com/")
				require.NoError(t, err)
				ended := make(chan error, 1)
				go func() { ended <- tc.end(resp.Body) }()
				synctest.Wait()
				select {
				case err := <-ended:
					t.Errorf("the body returned %v before its task's OnCompleted did", err)
					ended <- err
					go resp.Body.Close() // so that the task ends
				default:
				}
				res := <-completed
				assert.Equal(t, tc.status, res.Status)
				assert.Equal(t, tc.err, res.Err, "the task's error")
				assert.Equal(t, tc.err, <-ended, "what the body returned")
				st, _ := e.GroupStats("example.com:80")
				assert.Equal(t, 0, st.Running)
				require.NoError(t, resp.Body.Close())
			})
		})
	}
}

// A call that its group turns away is not sent, and its request body is
// closed, as a RoundTripper must, whether the RejectionHandler gives a
// response in its place or none. With none, the call gets a
// *NotSentError.
func TestATurnedAwayCallClosesItsBodyWhateverTheRejectionHandlerGives(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  *http.Response // what the RejectionHandler returns
		code    int            // the status the call gets, 0 for an error
		notSent bool
	}{
		{"a response", &http.Response{StatusCode: 299, Body: http.NoBody}, 299, false},
		{"no response", nil, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0).
				RejectionHandler(func(_ context.Context, _ *groupconc.Rejection) (any, error) {
					if tc.answer == nil {
						return nil, nil
					}
					return tc.answer, nil
				})
			e := newExecutor(t, b, nil)
			var sent atomic.Int64
			tr := &httplimit.Transport{Executor: e, Base: roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				sent.Add(1)
				return &http.Response{StatusCode: http.StatusOK, ContentLength: -1, Body: io.NopCloser(strings.NewReader("x")), Request: r}, nil
			})}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://example.com/", nil)
			require.NoError(t, err)
			held, err := tr.RoundTrip(req)
			require.NoError(t, err)
			defer held.Body.Close()

			body := &closeRecorder{Reader: strings.NewReader("payload")}
			req, err = http.NewRequestWithContext(t.Context(), http.MethodPost, "http://example.com/", body)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			if tc.notSent {
				var ns *httplimit.NotSentError
				require.ErrorAs(t, err, &ns)
				assert.Equal(t, "example.com:80", ns.Key)
				assert.Nil(t, resp)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.code, resp.StatusCode)
			}
			assert.True(t, body.closed.Load(), "the request's body is closed")
			assert.EqualValues(t, 1, sent.Load(), "the turned-away call was not sent")
		})
	}
}

// A response with no body to read comes back as Base gave it, its permits
// already back: http.NoBody stays http.NoBody, and a nil Body stays nil,
// for http.Client to fill in. Only a body to read is wrapped.
func TestAResponseWithNoBodyComesBackUnwrapped(t *testing.T) {
	empty := io.NopCloser(strings.NewReader(""))
	for _, tc := range []struct {
		name   string
		method string
		body   io.ReadCloser
		length int64
	}{
		{"http.NoBody", http.MethodGet, http.NoBody, -1},
		{"a nil body", http.MethodGet, nil, -1},
		{"a Content-Length of 0", http.MethodGet, empty, 0},
		{"an answer to HEAD", http.MethodHead, empty, 4},
	} {
		e := newExecutor(t, groupconc.NewPolicyBuilder(), nil)
		tr := &httplimit.Transport{Executor: e, Base: roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, ContentLength: tc.length, Body: tc.body, Request: r}, nil
		})}
		req, err := http.NewRequestWithContext(t.Context(), tc.method, "http://example.com/", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err, tc.name)
		assert.True(t, resp.Body == tc.body, "%s: the body is Base's", tc.name)
		assert.Equal(t, 0, e.Stats().Running, "%s: the permits are back", tc.name)
	}
}
