package httplimit_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// post sends a POST of body to url, with header's name and value pairs,
// and returns the reply's channel.
func post(ctx context.Context, c *http.Client, url string, body io.Reader, header ...string) <-chan reply {
	ch := make(chan reply, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
		if err != nil {
			ch <- reply{err: err}
			return
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			ch <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		ch <- reply{code: resp.StatusCode, body: string(b), err: err}
	}()
	return ch
}

// Over HTTP/2 an upload that waits for its permit is not read, so it
// holds its share of the connection's receive window. With each stream's
// share sized so that all of them fit in the connection's, as docs/http.md
// says, the running upload on the same connection still gets its body.
func TestAnUploadWaitingOverHTTP2LeavesRoomForTheRunningOne(t *testing.T) {
	e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), nil)
	h := httplimit.Handler(e, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, len(b))
	}), httplimit.ServerOptions{Key: func(*http.Request) string { return "uploads" }})
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.Config.HTTP2 = &http.HTTP2Config{
		MaxConcurrentStreams:          16,
		MaxReceiveBufferPerStream:     64 << 10,
		MaxReceiveBufferPerConnection: 16 * 64 << 10,
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	c := srv.Client()
	t.Cleanup(c.CloseIdleConnections)

	pr, pw := io.Pipe()
	running := post(t.Context(), c, srv.URL, pr)
	eventually(t, "the first upload running", func() bool { return e.Stats().Running == 1 })
	big := &countingReader{r: bytes.NewReader(make([]byte, 2<<20))}
	waiting := post(t.Context(), c, srv.URL, big)
	eventually(t, "the second upload waiting", func() bool { return e.Stats().Waiting == 1 })
	// Past its stream's share, the client has sent all the window lets it.
	eventually(t, "the waiting upload's window full", func() bool { return big.n.Load() > 64<<10 })
	_, err := pw.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, pw.Close())
	got := recv(t, running)
	require.NoError(t, got.err)
	assert.Equal(t, "5", got.body, "the running upload got its body")
	got = recv(t, waiting)
	require.NoError(t, got.err)
	assert.Equal(t, fmt.Sprint(2<<20), got.body)
}
