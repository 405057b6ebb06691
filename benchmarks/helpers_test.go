package benchmarks

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// gauge counts the tasks inside a section and remembers the most it saw.
type gauge struct{ cur, max atomic.Int64 }

func (g *gauge) inc() int64 {
	n := g.cur.Add(1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			return n
		}
	}
}

func (g *gauge) dec() { g.cur.Add(-1) }

// newRunner builds p's Runner for c; it skips tb with the peer's reason when
// p cannot express c.
func newRunner(tb testing.TB, p Peer, c Config) Runner {
	tb.Helper()
	r, err := p.New(c)
	var u *UnsupportedError
	if errors.As(err, &u) {
		tb.Skip(u.Reason)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func groupKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "g" + strconv.Itoa(i)
	}
	return keys
}

// settle returns once no goroutine is runnable, as far as the scheduler's
// run queues tell (Go 1.26's /sched/goroutines/runnable metric), so that
// tasks which wait on goroutines of their own have reached their wait. On a
// Go without that metric it yields a fixed, generous number of times.
func settle() {
	sample := []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}
	idle := 0
	for range 1 << 20 {
		runtime.Gosched()
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			for range 1 << 17 {
				runtime.Gosched()
			}
			return
		}
		if sample[0].Value.Uint64() != 0 {
			idle = 0
		} else if idle++; idle == 3 {
			return
		}
	}
}

// perTask runs run, which runs batch tasks to their end, as b's loop, and
// reports the time, allocations and bytes per task. One run goes first,
// untimed, so that groups (and any pooled workers) exist when timing
// starts.
func perTask(b *testing.B, batch int, run func()) {
	run()
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime()
	batches := 0
	for b.Loop() {
		run()
		batches++
	}
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&after)
	tasks := float64(batches * batch)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/tasks, "ns/task")
	b.ReportMetric(float64(cpu.Nanoseconds())/tasks, "cpu-ns/task")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/tasks, "allocs/task")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/tasks, "B/task")
}

// takeTurns compares kinds of rounds (names[k] for kind k) from one
// process, so that what the machine does meanwhile falls on every kind. It
// makes perKind instances of each kind (mk returns an instance's round,
// having run it once untimed) in shuffled order: where in memory an
// executor or a group lies moves its cost by several per cent, and the
// shuffle keeps that out of the comparison. Then each iteration of b.Loop
// runs one round of every kind, the order turning from one iteration to
// the next, each kind going round its instances; before, if not nil, runs
// ahead of each round, untimed. It reports allocs/task, the first kind's
// CPU time per task (names[0]+"-cpu-ns/task") and every other kind's CPU
// time against it (name+"/"+names[0]).
func takeTurns(b *testing.B, names []string, perKind, tasksPerRound int, mk func(kind, i int) (round func()), before func()) {
	rounds := make([][]func(), len(names))
	rng := rand.New(rand.NewPCG(1, 2))
	for _, i := range rng.Perm(len(names) * perKind) {
		kind := i % len(names)
		rounds[kind] = append(rounds[kind], mk(kind, i/len(names)))
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu := make([]time.Duration, len(names))
	n := 0
	for b.Loop() {
		for j := range names {
			kind := (n + j) % len(names) // each kind takes each place in turn
			if before != nil {
				before()
			}
			c0 := cpuTime()
			rounds[kind][n%perKind]()
			cpu[kind] += cpuTime() - c0
		}
		n++
	}
	runtime.ReadMemStats(&m1)
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(n*len(names)*tasksPerRound), "allocs/task")
	b.ReportMetric(float64(cpu[0].Nanoseconds())/float64(n*tasksPerRound), names[0]+"-cpu-ns/task")
	for k, name := range names[1:] {
		b.ReportMetric(float64(cpu[k+1])/float64(cpu[0]), name+"/"+names[0])
	}
}
