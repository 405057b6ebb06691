package httplimit_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httplimit"
)

// hello is the handler measured: it writes a short body.
var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })

// benchHandlers returns the bare handler, the same under Handler, and the
// same in a plain groupconc.Do, with a group limit that is never reached.
// So limited minus do is what the middleware adds to Do.
func benchHandlers(b *testing.B) (map[string]http.Handler, *groupconc.GroupExecutor) {
	p, err := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(64).Build()
	if err != nil {
		b.Fatal(err)
	}
	e := groupconc.New(p)
	b.Cleanup(func() { e.Close() })
	return map[string]http.Handler{
		"bare":    hello,
		"limited": httplimit.Handler(e, hello, httplimit.ServerOptions{Key: httplimit.HeaderKey("X-Tenant", "anonymous")}),
		"do": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			groupconc.Do(r.Context(), e, "acme", func(context.Context) (struct{}, error) {
				hello.ServeHTTP(w, r)
				return struct{}{}, nil
			}, groupconc.SubmitOptions{})
		}),
	}, e
}

// BenchmarkServerLoopback sends requests one after another over one
// keep-alive connection to a real server on 127.0.0.1, with and without
// the middleware. It reports the latency's median and 99th percentile.
// Compare bare and limited measured in the same run, with -count.
func BenchmarkServerLoopback(b *testing.B) {
	hs, _ := benchHandlers(b)
	for _, name := range []string{"bare", "limited"} {
		b.Run(name, func(b *testing.B) {
			srv := httptest.NewServer(hs[name])
			defer srv.Close()
			c := srv.Client()
			req, _ := http.NewRequest(http.MethodGet, srv.URL+"/hello", nil)
			req.Header.Set("X-Tenant", "acme")
			lat := make([]time.Duration, 0, 1<<16)
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				resp, err := c.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if len(lat) < cap(lat) {
					lat = append(lat, time.Since(start))
				}
			}
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkServerInProcess calls the handlers directly, with no network,
// so what the middleware adds to a request stands out of the noise.
func BenchmarkServerInProcess(b *testing.B) {
	hs, _ := benchHandlers(b)
	for _, name := range []string{"bare", "do", "limited"} {
		b.Run(name, func(b *testing.B) {
			h := hs[name]
			req := httptest.NewRequest(http.MethodGet, "/hello", nil)
			req.Header.Set("X-Tenant", "acme")
			w := &discardWriter{header: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		})
	}
}

// BenchmarkServerInProcessInsideTask is BenchmarkServerInProcess with a
// request whose context is a running task's. There Do runs its function at
// once and takes no permits, but counts it as a task. So limited minus do
// is what the middleware adds: the key, the options, the request that
// carries the task's context.
func BenchmarkServerInProcessInsideTask(b *testing.B) {
	hs, e := benchHandlers(b)
	for _, name := range []string{"bare", "do", "limited"} {
		b.Run(name, func(b *testing.B) {
			h := hs[name]
			w := &discardWriter{header: http.Header{}}
			groupconc.Do(b.Context(), e, "bench", func(ctx context.Context) (struct{}, error) {
				req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/hello", nil)
				req.Header.Set("X-Tenant", "acme")
				b.ReportAllocs()
				for b.Loop() {
					h.ServeHTTP(w, req)
				}
				return struct{}{}, nil
			}, groupconc.SubmitOptions{})
		})
	}
}

// BenchmarkServerInProcessParallel is BenchmarkServerInProcess with a
// request on every P at once, all in one group.
func BenchmarkServerInProcessParallel(b *testing.B) {
	hs, _ := benchHandlers(b)
	for _, name := range []string{"bare", "do", "limited"} {
		b.Run(name, func(b *testing.B) {
			h := hs[name]
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req := httptest.NewRequest(http.MethodGet, "/hello", nil)
				req.Header.Set("X-Tenant", "acme")
				w := &discardWriter{header: http.Header{}}
				for pb.Next() {
					h.ServeHTTP(w, req)
				}
			})
		})
	}
}

// BenchmarkTransportLoopback is BenchmarkServerLoopback from the client's
// side: a plain http.Transport, and the same under Transport.
func BenchmarkTransportLoopback(b *testing.B) {
	p, err := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(64).Build()
	if err != nil {
		b.Fatal(err)
	}
	e := groupconc.New(p)
	defer e.Close()
	srv := httptest.NewServer(hello)
	defer srv.Close()
	for _, name := range []string{"bare", "limited"} {
		b.Run(name, func(b *testing.B) {
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			var rt http.RoundTripper = base
			if name == "limited" {
				rt = &httplimit.Transport{Base: base, Executor: e}
			}
			c := &http.Client{Transport: rt}
			lat := make([]time.Duration, 0, 1<<16)
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				resp, err := c.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if len(lat) < cap(lat) {
					lat = append(lat, time.Since(start))
				}
			}
			reportPercentiles(b, lat)
		})
	}
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ header http.Header }

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}
