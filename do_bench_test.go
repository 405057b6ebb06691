package groupconc_test

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sync/semaphore"

	"github.com/kobe/groupconc"
)

// BenchmarkDoUncontended is one Do at a time on one group of limit 4.
// BenchmarkDoSubmitWait is the same work as a task: Submit, then Wait.
func BenchmarkDoUncontended(b *testing.B) {
	e := benchLimited(b, 4)
	defer e.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := groupconc.Do(ctx, e, "g", benchNoop, groupconc.SubmitOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDoSubmitWait(b *testing.B) {
	e := benchLimited(b, 4)
	defer e.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		h, err := groupconc.Submit(ctx, e, "g", "t", benchNoop)
		if err != nil {
			b.Fatal(err)
		}
		h.Wait()
	}
}

// BenchmarkDoContended is 64 callers doing Do on one group of limit 4.
// BenchmarkDoSemaphore is the same with a map of semaphore.Weighted. The
// work is none, about a microsecond of arithmetic, a yield of the
// processor, or a call to a downstream that answers from another
// goroutine. On two CPUs only the yield and the call make callers wait for
// permits: the others compare the fixed costs.
func BenchmarkDoContended(b *testing.B) {
	b.Run("work=0", func(b *testing.B) { benchDoContended(b, benchNoop) })
	b.Run("work=1us", func(b *testing.B) { benchDoContended(b, benchWork) })
	b.Run("work=yield", func(b *testing.B) { benchDoContended(b, benchYield) })
	b.Run("work=call", func(b *testing.B) { benchDoContended(b, benchDownstream(b)) })
}

func BenchmarkDoSemaphore(b *testing.B) {
	b.Run("work=0", func(b *testing.B) { benchSemaphore(b, benchNoop) })
	b.Run("work=1us", func(b *testing.B) { benchSemaphore(b, benchWork) })
	b.Run("work=yield", func(b *testing.B) { benchSemaphore(b, benchYield) })
	b.Run("work=call", func(b *testing.B) { benchSemaphore(b, benchDownstream(b)) })
}

func benchDoContended(b *testing.B, fn groupconc.Task[int]) {
	e := benchLimited(b, 4)
	defer e.Close()
	ctx := context.Background()
	b.ReportAllocs()
	benchParallel64(b, func() {
		if _, err := groupconc.Do(ctx, e, "g", fn, groupconc.SubmitOptions{}); err != nil {
			b.Error(err)
		}
	})
}

// benchWork is about a microsecond of arithmetic.
func benchWork(context.Context) (int, error) {
	x := uint64(1)
	for range 600 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return int(x & 1), nil
}

// benchYield holds its permits across a yield of the processor, as work
// that blocks does.
func benchYield(context.Context) (int, error) {
	runtime.Gosched()
	return 0, nil
}

// benchDownstream returns work that calls a downstream: it sends a
// request to a server goroutine and waits off the processor for the
// answer, as a call over the network does. The server stops with b.
func benchDownstream(b *testing.B) groupconc.Task[int] {
	reqs := make(chan chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for r := range reqs {
			r <- struct{}{}
		}
	}()
	b.Cleanup(func() {
		close(reqs)
		<-done
	})
	replies := sync.Pool{New: func() any { return make(chan struct{}, 1) }}
	return func(context.Context) (int, error) {
		r := replies.Get().(chan struct{})
		reqs <- r
		<-r
		replies.Put(r)
		return 0, nil
	}
}

func benchSemaphore(b *testing.B, fn groupconc.Task[int]) {
	var (
		mu   sync.Mutex
		sems = map[string]*semaphore.Weighted{}
	)
	get := func(key string) *semaphore.Weighted {
		mu.Lock()
		defer mu.Unlock()
		s, ok := sems[key]
		if !ok {
			s = semaphore.NewWeighted(4)
			sems[key] = s
		}
		return s
	}
	ctx := context.Background()
	b.ReportAllocs()
	benchParallel64(b, func() {
		s := get("g")
		if err := s.Acquire(ctx, 1); err != nil {
			b.Error(err)
			return
		}
		_, _ = fn(ctx)
		s.Release(1)
	})
}

// benchParallel64 runs f b.N times over 64 goroutines.
func benchParallel64(b *testing.B, f func()) {
	b.Helper()
	var (
		wg   sync.WaitGroup
		next = make(chan struct{}, 64)
	)
	go func() {
		for range b.N {
			next <- struct{}{}
		}
		close(next)
	}()
	b.ResetTimer()
	for range 64 {
		wg.Go(func() {
			for range next {
				f()
			}
		})
	}
	wg.Wait()
}

func benchLimited(b *testing.B, limit int) *groupconc.GroupExecutor {
	b.Helper()
	p, err := groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(limit).Build()
	if err != nil {
		b.Fatal(err)
	}
	return groupconc.New(p)
}
