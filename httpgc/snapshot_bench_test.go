package httpgc_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// manyGroups returns an executor with n groups, of which one in a hundred
// has a running task and a waiting one (so that the waits differ), the
// rest idle; it is shut down when b ends.
func manyGroups(b *testing.B, n int) *groupconc.GroupExecutor {
	e := adaptertest.NewExecutor(b, groupconc.NewPolicyBuilder())
	loadGroups(b, e, n, func(i int) string { return fmt.Sprintf("tenant-%06d", i) })
	return e
}

// loadGroups gives e the n groups key(0) to key(n-1), loaded as
// manyGroups says.
func loadGroups(b *testing.B, e *groupconc.GroupExecutor, n int, key func(i int) string) {
	gate := adaptertest.NewGate(b)
	var done []*groupconc.TaskHandle[int]
	for i := range n {
		if i%100 == 0 {
			adaptertest.Submit(b, e, key(i), gate.Task)
			adaptertest.Submit(b, e, key(i), gate.Task)
			continue
		}
		done = append(done, adaptertest.Submit(b, e, key(i), adaptertest.OK))
	}
	for _, h := range done {
		h.Wait()
	}
	gate.WaitStarted(n / 100)
}

// BenchmarkSnapshot measures what the stream's producer does once per
// interval, through the API that does the same: the top 100 groups by
// oldest wait, out of every group, as JSON. The stats are the cheap part
// (BenchmarkStats).
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		e := manyGroups(b, n)
		for _, tc := range []struct {
			name  string
			opts  httpgc.Options
			query string
		}{
			{"oldestWait", httpgc.Options{}, "/api/groups?limit=100"},
			{"oldestWait/HashKey", httpgc.Options{DisplayKey: httpgc.HashKey([]byte("k"))}, "/api/groups?limit=100"},
			{"key/HashKey", httpgc.Options{DisplayKey: httpgc.HashKey([]byte("k"))}, "/api/groups?limit=100&sort=key"},
		} {
			if n != 100_000 && tc.name != "oldestWait" {
				continue
			}
			h, err := httpgc.New(e, tc.opts)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { h.Close() })
			b.Run(fmt.Sprintf("groups=%d/%s", n, tc.name), func(b *testing.B) {
				req := request(http.MethodGet, tc.query, "")
				b.ReportAllocs()
				for b.Loop() {
					if w := serve(h, req); w.Code != http.StatusOK {
						b.Fatal(w.Code, w.Body)
					}
				}
			})
		}
	}
}

func BenchmarkStats(b *testing.B) {
	e := manyGroups(b, 100_000)
	h, err := httpgc.New(e, httpgc.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	req := request(http.MethodGet, "/api/stats", "")
	b.ReportAllocs()
	for b.Loop() {
		serve(h, req)
	}
}

// BenchmarkW2Watched is the W2 workload (benchmarks module) alone, and
// with the dashboard mounted and a stream open at the shortest interval:
// the handler puts nothing on a task's path, so the cost per task is the
// same, give or take the producer's share of the CPU.
func BenchmarkW2Watched(b *testing.B) {
	b.Run("alone", func(b *testing.B) {
		adaptertest.BenchW2(b, adaptertest.NewExecutor(b, adaptertest.W2Policy()))
	})
	b.Run("watched", func(b *testing.B) {
		e := adaptertest.NewExecutor(b, adaptertest.W2Policy())
		h, err := httpgc.New(e, httpgc.Options{Interval: 100 * time.Millisecond}) // the shortest
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { h.Close() })
		rec := newRecorder()
		rec.discard = true
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeHTTP(rec, request(http.MethodGet, "/api/events", "").WithContext(ctx))
		}()
		adaptertest.BenchW2(b, e)
		cancel()
		<-done
		if rec.written() == 0 {
			b.Fatal("the stream sent nothing")
		}
	})
}

// BenchmarkAllGroupStats is the executor's part of a snapshot: reading
// every group's stats.
func BenchmarkAllGroupStats(b *testing.B) {
	e := manyGroups(b, 100_000)
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for range e.AllGroupStats() {
			n++
		}
		if n != 100_000 {
			b.Fatal(n)
		}
	}
}
