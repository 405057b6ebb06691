package httplimit_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// An Expect: 100-continue upload that waits for its permit is not asked
// for its body: no 100 Continue goes out until the handler reads it. So one
// whose wait ends is answered before it sends a byte, and one that gets
// its permit sends its body then.
func TestAnExpectContinueUploadSendsItsBodyOnlyOnceItRuns(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), nil)
	g := newGate()
	limited := httplimit.Handler(e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			g.ServeHTTP(w, r)
			return
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Write(b)
	}), httplimit.ServerOptions{Key: func(*http.Request) string { return "uploads" }})
	cancels := make(chan context.CancelFunc, 1)
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		if r.URL.Path == "/given-up" {
			cancels <- cancel
		}
		limited.ServeHTTP(w, r.WithContext(ctx))
	}))
	c := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Hour}}
	t.Cleanup(c.CloseIdleConnections)
	upload := func(path string, body io.Reader) <-chan reply {
		return post(t.Context(), c, srv.URL+path, body, "Expect", "100-continue")
	}

	first := goGet(t.Context(), c, srv.URL+"/hold?id=first")
	g.waitEntered(t)
	unsent := &countingReader{r: strings.NewReader("never sent")}
	givenUp := upload("/given-up", unsent)
	cancel := <-cancels
	eventually(t, "the upload waiting", func() bool { return e.Stats().Waiting == 1 })
	cancel()
	got := recv(t, givenUp)
	require.NoError(t, got.err)
	assert.Equal(t, http.StatusServiceUnavailable, got.code)
	assert.Zero(t, unsent.n.Load(), "bytes of the body read by the client")

	sent := upload("/up", strings.NewReader("payload"))
	eventually(t, "the upload waiting", func() bool { return e.Stats().Waiting == 1 })
	g.open(t)
	assert.Equal(t, 200, recv(t, first).code)
	got = recv(t, sent)
	require.NoError(t, got.err)
	assert.Equal(t, "payload", got.body)
}
