// Package adaptertest is what the tests of the root module's own adapter
// packages (httpgc) use. It gives executors shut down as a test ends,
// tasks gated on channels, and submission with fresh task IDs. It also
// gives the W2 benchmark loop. Other modules keep their own copies, since
// no module imports another's internal packages. The .ci/run script checks
// them against this one. It uses the testing package only, so the root
// module gains no dependency.
package adaptertest

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kobe/groupconc"
)

// NewExecutor builds b's policy and an executor. The executor is shut
// down when the test ends, waiting for its tasks.
func NewExecutor(t testing.TB, b *groupconc.PolicyBuilder) *groupconc.GroupExecutor {
	t.Helper()
	p, err := b.Build()
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	e := groupconc.New(p)
	t.Cleanup(func() { Quiesce(t, e) })
	return e
}

// Quiesce shuts e down. Once it returns, every task has ended and the
// listener has heard of it. This matters because a handle completes
// before its OnCompleted.
func Quiesce(t testing.TB, e *groupconc.GroupExecutor) {
	t.Helper()
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

var taskIDs atomic.Int64

// Submit submits task to key's group with a fresh task ID.
func Submit(t testing.TB, e *groupconc.GroupExecutor, key string, task groupconc.Task[int]) *groupconc.TaskHandle[int] {
	t.Helper()
	return SubmitCtx(t, context.Background(), e, key, task)
}

// SubmitCtx is Submit with the caller's context ctx.
func SubmitCtx(t testing.TB, ctx context.Context, e *groupconc.GroupExecutor, key string, task groupconc.Task[int]) *groupconc.TaskHandle[int] {
	t.Helper()
	h, err := groupconc.Submit(ctx, e, key, fmt.Sprint("t", taskIDs.Add(1)), task)
	if err != nil {
		t.Fatalf("Submit to %q: %v", key, err)
	}
	return h
}

// Gate is a task that tells when it starts and runs until the gate opens.
type Gate struct {
	started chan struct{}
	open    chan struct{}
	once    sync.Once
}

// NewGate returns a closed gate. It opens at the latest as the test ends,
// before the executors made earlier are shut down.
func NewGate(t testing.TB) *Gate {
	g := &Gate{started: make(chan struct{}, 1024), open: make(chan struct{})}
	t.Cleanup(g.Release)
	return g
}

// Release opens the gate.
func (g *Gate) Release() { g.once.Do(func() { close(g.open) }) }

// Task is the gated task.
func (g *Gate) Task(context.Context) (int, error) {
	g.started <- struct{}{}
	<-g.open
	return 0, nil
}

// WaitStarted waits until n tasks of g have started.
func (g *Gate) WaitStarted(n int) {
	for range n {
		<-g.started
	}
}

// Sleeper returns a task that sleeps d. Inside a synctest bubble, d is
// fake time.
func Sleeper(d time.Duration) groupconc.Task[int] {
	return func(context.Context) (int, error) {
		time.Sleep(d)
		return 0, nil
	}
}

// OK is a task that succeeds at once.
func OK(context.Context) (int, error) { return 0, nil }

// The W2 workload of the benchmarks module runs batches of 4 000 trivial
// tasks. They go round-robin over 1 000 groups of concurrency 4, under a
// global cap of 64.
const (
	w2Groups = 1000
	w2Batch  = 4 * w2Groups
)

// W2Policy returns a builder of W2's limits.
func W2Policy() *groupconc.PolicyBuilder {
	return groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(4).GlobalMaxInFlight(64)
}

var noop groupconc.Task[struct{}] = func(context.Context) (struct{}, error) { return struct{}{}, nil }

// BenchW2 reports W2's cost per task on e, for submitting a batch and
// waiting for it.
func BenchW2(b *testing.B, e *groupconc.GroupExecutor) {
	keys := make([]string, w2Groups)
	for i := range keys {
		keys[i] = fmt.Sprint("g", i)
	}
	handles := make([]*groupconc.TaskHandle[struct{}], w2Batch)
	ctx := context.Background()
	PerTask(b, w2Batch, func() {
		for i := range handles {
			h, err := groupconc.Submit(ctx, e, keys[i%w2Groups], "t", noop)
			if err != nil {
				b.Fatal(err)
			}
			handles[i] = h
		}
		for _, h := range handles {
			h.Wait()
		}
	})
}

// PerTask runs run as b's loop. Each call of run runs batch tasks to
// their end. PerTask reports the time, allocations and bytes per task, as
// the benchmarks module does. One run goes first, untimed. So groups, and
// any pooled workers, exist when timing starts.
func PerTask(b *testing.B, batch int, run func()) {
	run()
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	batches := 0
	for b.Loop() {
		run()
		batches++
	}
	runtime.ReadMemStats(&after)
	tasks := float64(batches * batch)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/tasks, "ns/task")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/tasks, "allocs/task")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/tasks, "B/task")
}

// Allocated returns the bytes f allocates, the least of five calls. Tests
// compare it at two sizes to show what a call's cost grows with.
func Allocated(f func()) uint64 {
	least := ^uint64(0)
	var before, after runtime.MemStats
	for range 5 {
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}
