package httplimit_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// unwinding is a response body whose Read or Close panics or calls
// runtime.Goexit.
type unwinding struct {
	io.ReadCloser
	in, how string
}

func (b *unwinding) unwind() {
	if b.how == "goexit" {
		runtime.Goexit()
	}
	panic("body: boom")
}

func (b *unwinding) Read(p []byte) (int, error) {
	if b.in == "read" {
		b.unwind()
	}
	return b.ReadCloser.Read(p)
}

func (b *unwinding) Close() error {
	b.ReadCloser.Close()
	if b.in == "close" {
		b.unwind()
	}
	return nil
}

// firstUnwinds gives its first response a body that unwinds.
type firstUnwinds struct {
	base    http.RoundTripper
	in, how string
	n       int
}

func (f *firstUnwinds) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := f.base.RoundTrip(r)
	if err == nil && f.n == 0 {
		resp.Body = &unwinding{resp.Body, f.in, f.how}
	}
	f.n++
	return resp, err
}

// A response body whose Read or Close does not return (a panic, or
// runtime.Goexit) still gives the request's permits back: the next request
// to the host, at a limit of 1, is sent.
func TestABodyThatUnwindsGivesThePermitsBack(t *testing.T) {
	for _, in := range []string{"read", "close"} {
		for _, how := range []string{"panic", "goexit"} {
			t.Run(in+"/"+how, func(t *testing.T) {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }))
				defer srv.Close()
				e := newExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(1), nil)
				base := &http.Transport{}
				defer base.CloseIdleConnections()
				client := &http.Client{Transport: &httplimit.Transport{Executor: e, Base: &firstUnwinds{base: base, in: in, how: how}}}
				done := make(chan struct{})
				go func() {
					defer close(done)
					defer func() { _ = recover() }()
					resp, err := client.Get(srv.URL)
					if err != nil {
						return
					}
					if in == "read" { // its goroutine ends in Read, before it closes
						_, _ = io.Copy(io.Discard, resp.Body)
					}
					resp.Body.Close()
				}()
				<-done
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				require.NoError(t, err)
				resp, err := client.Do(req)
				require.NoError(t, err, "the next request to the host")
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			})
		}
	}
}
