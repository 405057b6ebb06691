package httplimit_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

func TestARedirectTurnedAwayIsNoNotSentErrorSinceTheRequestWasSent(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0), nil)
	c := newClient(t, e, nil)
	to := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "x") }))
	held, err := c.Get(to.URL) // holds the only permit of the redirect's host
	require.NoError(t, err)
	defer held.Body.Close()
	var posts atomic.Int64
	from := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		http.Redirect(w, r, to.URL+"/next", http.StatusTemporaryRedirect)
	}))

	_, err = c.Post(from.URL, "text/plain", strings.NewReader("order"))
	require.Error(t, err)
	require.EqualValues(t, 1, posts.Load(), "the POST was sent before its redirect was turned away")
	var ns *httplimit.NotSentError
	assert.False(t, errors.As(err, &ns), "got a NotSentError, which says the request is safe to retry: %v", err)
	assert.ErrorIs(t, err, groupconc.ErrRejected)
	var re *groupconc.RejectedError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, hostOf(t, to.URL), re.GroupKey)
}

func TestARedirectToTheSameHostFindsThePermitOfTheFirstRequestBack(t *testing.T) {
	for _, iso := range []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare} {
		t.Run(iso.String(), func(t *testing.T) {
			b := groupconc.NewPolicyBuilder().Isolation(iso).GlobalMaxInFlight(1).
				DefaultMaxConcurrencyPerGroup(1).DefaultQueueThresholdPerGroup(0)
			if iso == groupconc.IsolationOff {
				b = b.GlobalQueueThreshold(0)
			}
			e := newExecutor(t, b, nil)
			c := newClient(t, e, nil)
			srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/from" {
					w.Header().Set("Location", "/to")
					w.WriteHeader(http.StatusTemporaryRedirect)
					fmt.Fprint(w, strings.Repeat("x", 10<<10)) // more than http.Client reads
					return
				}
				body, _ := io.ReadAll(r.Body)
				fmt.Fprint(w, "got ", string(body))
			}))
			// Nothing may wait: the redirect is turned away if the first
			// request still holds the one permit.
			resp, err := c.Post(srv.URL+"/from", "text/plain", strings.NewReader("order"))
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, "got order", string(body))
			st := e.Stats()
			assert.EqualValues(t, 2, st.Succeeded)
			assert.EqualValues(t, 0, st.Rejected)
		})
	}
}
