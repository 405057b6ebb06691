package benchmarks

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// W6 sizes: one producer streams tasks round-robin over 1 000 groups of
// limit 4, each holding at most 64 waiting tasks.
const (
	w6Groups   = 1000
	w6PerGroup = 4
	w6Queue    = 64
	w6Spin     = 256                   // rounds of w6Work: about 0.4µs of CPU
	w6Wait     = 10 * time.Millisecond // task=cpu+wait: 4 000 slots free 0.4 per µs
	w6Sample   = time.Millisecond
)

// w6Sizes are the stream lengths: the peaks must not grow with them. (A
// stream of 100 000 ends soon after its backlog reaches the bound, before
// the garbage collector's pace settles: its peak heap in use is lower.)
var w6Sizes = []int{100_000, 1_000_000, 3_000_000}

// w6Sink keeps w6Work's result alive.
var w6Sink atomic.Uint64

// w6Work is the tasks' short CPU work: rounds of xorshift.
func w6Work() uint64 {
	x := uint64(88172645463325252)
	for range w6Spin {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

// BenchmarkW6LosslessStream streams 100 000 to 3 000 000 tasks from one
// producer, round-robin over 1 000 groups of limit 4, to peers that bound
// each group's backlog by making the producer wait (groupconc: SubmitWith
// with Block and a queue threshold of 64; pond: a pool per group with a
// queue of 64; errgroup: SetLimit(4), no queue). Two kinds of task:
//
//   - task=cpu: short CPU work alone. The consumers share the two CPUs with
//     the producer and mostly keep up with it, so its waits are rare.
//   - task=cpu+wait: the same work, then a 10ms wait standing for I/O. The
//     4 000 slots free 0.4 tasks per µs, slower than the producer submits,
//     so the backlog reaches each peer's bound and the producer waits at
//     it from then on: the steady state of backpressure. The ideal is
//     2.5µs per task (10ms / 4 000 slots); a slot left idle while the
//     producer waits for another group costs more.
//
// It reports the time per task; the process's CPU time per task (user and
// system), which other work on a shared machine disturbs less; and,
// sampled every millisecond, the peak heap in use (HeapInuse: live objects
// and garbage not yet swept), the peak live heap (as of the last garbage
// collection), goroutine stacks, goroutine count and number of tasks
// accepted but not started. The peaks must not grow with the stream's
// length: the backlog is bounded, not the stream.
func BenchmarkW6LosslessStream(b *testing.B) {
	keys := groupKeys(w6Groups)
	c := StreamConfig{PerGroup: w6PerGroup, Queue: w6Queue}
	for _, p := range StreamPeers {
		b.Run("peer="+p.Name, func(b *testing.B) {
			for _, wait := range []time.Duration{0, w6Wait} {
				name := "task=cpu"
				if wait > 0 {
					name = "task=cpu+wait"
				}
				b.Run(name, func(b *testing.B) {
					for _, n := range w6Sizes {
						b.Run(fmt.Sprint("tasks=", n), func(b *testing.B) {
							r, err := p.New(c)
							if err != nil {
								b.Fatal(err)
							}
							defer r.Close()
							benchStream(b, r, keys, n, wait)
						})
					}
				})
			}
		})
	}
}

// benchStream runs the stream of n tasks, each working for w6Work and then
// waiting for wait, as b's loop and reports its metrics (see
// BenchmarkW6LosslessStream).
func benchStream(b *testing.B, r Runner, keys []string, n int, wait time.Duration) {
	var accepted, started atomic.Int64
	t := NewTask(func() {
		started.Add(1)
		w6Sink.Add(w6Work())
		if wait > 0 {
			time.Sleep(wait) // the task's I/O
		}
	})
	b.ReportAllocs()
	var peak streamPeaks
	var cpu time.Duration
	runs := 0
	for b.Loop() {
		accepted.Store(0)
		started.Store(0)
		runtime.GC()
		stop := peak.sample(func() int64 { return accepted.Load() - started.Load() })
		cpu0 := cpuTime()
		for i := range n {
			if err := r.Go(keys[i%len(keys)], t); err != nil {
				b.Fatal(err)
			}
			accepted.Add(1)
		}
		if err := r.Wait(); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - cpu0
		stop()
		runs++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs*n), "ns/task")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(runs*n), "cpu-ns/task")
	b.ReportMetric(float64(peak.heap), "peak-heap-B")
	b.ReportMetric(float64(peak.live), "peak-live-B")
	b.ReportMetric(float64(peak.stack), "peak-stack-B")
	b.ReportMetric(float64(peak.goroutines), "peak-goroutines")
	b.ReportMetric(float64(peak.queued), "peak-queued")
}

// streamPeaks are the most seen by any sample of any run.
type streamPeaks struct {
	heap, live, stack, goroutines, queued int64
}

// sample starts a goroutine that reads the runtime's memory metrics (no
// stop-the-world, unlike ReadMemStats), the goroutine count and queued()
// every w6Sample into p, and returns what stops it, after one last sample.
func (p *streamPeaks) sample(queued func() int64) (stop func()) {
	s := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}
	read := func() {
		metrics.Read(s)
		p.heap = max(p.heap, int64(s[0].Value.Uint64()+s[1].Value.Uint64()))
		p.stack = max(p.stack, int64(s[2].Value.Uint64()))
		p.live = max(p.live, int64(s[3].Value.Uint64()))
		p.goroutines = max(p.goroutines, int64(runtime.NumGoroutine()))
		p.queued = max(p.queued, queued())
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(w6Sample)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				read()
			case <-done:
				read()
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }
}
