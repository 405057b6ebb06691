package redisgc

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/kobe/groupconc"
)

// BenchmarkThroughput runs batches of 1 000 trivial tasks over 4 groups of
// limit 8 on one executor, alone and under a Coordinator whose fleet is this
// one replica (so its shares are the full limits: only the cost of
// coordinating differs). One op is one batch; ns/task is the figure.
func BenchmarkThroughput(b *testing.B) {
	const groups, limit, batch = 4, 8, 1000
	keys := make([]string, groups)
	for i := range keys {
		keys[i] = "g" + strconv.Itoa(i)
	}
	run := func(b *testing.B, exec *groupconc.GroupExecutor) {
		ctx := context.Background()
		hs := make([]*groupconc.TaskHandle[int], batch)
		task := func(context.Context) (int, error) { return 1, nil }
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			for i := range hs {
				h, err := groupconc.Submit(ctx, exec, keys[i%groups], "t", task)
				if err != nil {
					b.Fatal(err)
				}
				hs[i] = h
			}
			for _, h := range hs {
				h.Wait()
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/task")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("executor", func(b *testing.B) {
		p, _ := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(limit).Build()
		exec := groupconc.New(p)
		defer exec.Close()
		run(b, exec)
	})
	b.Run("executor+redisgc", func(b *testing.B) {
		s := startRedis(b)
		exec := groupconc.New(nil)
		defer exec.Close()
		c, err := New(s.client(b), exec, Options{DefaultLimit: limit, LeaseTTL: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() { errc <- c.Run(context.Background()) }()
		defer func() {
			_ = c.Close()
			if err := <-errc; !errors.Is(err, ErrClosed) {
				b.Errorf("Run: %v", err)
			}
		}()
		// Keep every group busy until the replica holds its full limits,
		// then let the warm-up tasks finish: an idle group keeps its share
		// for a RenewInterval.
		eventually(b, 10*time.Second, func() bool {
			for _, k := range keys {
				if s, _ := exec.GroupStats(k); s.Waiting > limit {
					continue
				}
				for range 2 * limit {
					_, _ = groupconc.Submit(context.Background(), exec, k, "warm", func(ctx context.Context) (int, error) {
						<-time.After(time.Millisecond)
						return 0, nil
					})
				}
			}
			for _, k := range keys {
				if s, _ := exec.GroupStats(k); s.MaxConcurrency != limit {
					return false
				}
			}
			return true
		}, "the replica never held its full limits")
		eventually(b, 10*time.Second, func() bool { s := exec.Stats(); return s.Running+s.Waiting == 0 },
			"the warm-up tasks never finished")
		run(b, exec)
		for _, k := range keys {
			if s, _ := exec.GroupStats(k); s.MaxConcurrency != limit {
				b.Errorf("%s ran at %d, not its full limit %d", k, s.MaxConcurrency, limit)
			}
		}
	})
}
