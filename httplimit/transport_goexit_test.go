package httplimit_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// A callback of the executor that calls runtime.Goexit on the goroutine
// RoundTrip waits on (a listener as the request is submitted or started,
// a RejectionHandler) ends that goroutine before the request is sent.
// RoundTrip returns a *NotSentError then, instead of waiting for good;
// the base is never called, nothing is left running or waiting, and the
// next request is sent.
func TestACallbackThatCallsGoexitFailsTheRequestUnsent(t *testing.T) {
	for _, where := range []string{"submitted", "started", "rejection handler"} {
		t.Run(where, func(t *testing.T) {
			var armed atomic.Bool
			exit := func() {
				if armed.CompareAndSwap(true, false) {
					runtime.Goexit()
				}
			}
			b := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1)
			switch where {
			case "submitted":
				b = b.TaskLifecycleListener(groupconc.ListenerFuncs{Submitted: func(string, string) { exit() }})
			case "started":
				b = b.TaskLifecycleListener(groupconc.ListenerFuncs{Started: func(string, string) { exit() }})
			case "rejection handler":
				// The first request holds the one permit, so the next
				// finds no room in the queue and meets the handler.
				b = b.DefaultQueueThresholdPerGroup(0).RejectionHandler(func(context.Context, *groupconc.Rejection) (any, error) {
					exit()
					return nil, nil
				})
			}
			e := newExecutor(t, b, nil)
			var sent atomic.Int64
			c := &http.Client{Transport: &httplimit.Transport{
				Executor: e,
				Key:      func(*http.Request) string { return "k" },
				Base: roundTripFunc(func(*http.Request) (*http.Response, error) {
					sent.Add(1)
					return &http.Response{StatusCode: http.StatusOK, ContentLength: -1, Body: io.NopCloser(strings.NewReader("ok"))}, nil
				}),
			}}
			var held *http.Response
			if where == "rejection handler" {
				var err error
				held, err = c.Get("http://x/")
				require.NoError(t, err)
				sent.Store(0)
			}

			armed.Store(true)
			got := recv(t, goGet(t.Context(), c, "http://x/"))
			var ns *httplimit.NotSentError
			require.ErrorAs(t, got.err, &ns)
			assert.Equal(t, "k", ns.Key)
			assert.ErrorContains(t, ns, "runtime.Goexit")
			assert.False(t, armed.Load(), "the callback ran")
			assert.Zero(t, sent.Load(), "the request was never sent")
			if held != nil {
				require.NoError(t, held.Body.Close()) // the permit is back
			}

			got = recv(t, goGet(t.Context(), c, "http://x/"))
			require.NoError(t, got.err)
			assert.Equal(t, "ok", got.body)
			assert.EqualValues(t, 1, sent.Load())
			st := e.Stats()
			assert.Zero(t, st.Running+st.Waiting+st.Blocked, "nothing left running or waiting")
		})
	}
}
