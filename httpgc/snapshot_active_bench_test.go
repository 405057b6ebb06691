//go:build unix

package httpgc

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// BenchmarkSnapshot1MRemembered measures what the stream's producer does
// once per interval, publish, with 1 000 000 groups remembered. Of those,
// 1 000 run a task with another waiting, and then 100 000 have a task
// waiting. The frame carries the top 100 by oldest wait, and its cost
// follows what is active. every-group is the same top 100 through
// AllGroupStats, as GET api/groups builds it, for comparison. cpu-ns/op
// is the process's CPU time, on any core, per snapshot. Building the
// million groups takes a few seconds, once per run of the benchmark.
func BenchmarkSnapshot1MRemembered(b *testing.B) {
	const remembered, running = 1_000_000, 1_000
	e := adaptertest.NewExecutor(b, groupconc.NewPolicyBuilder().GlobalMaxInFlight(running))
	gate := adaptertest.NewGate(b)
	key := func(i int) string { return fmt.Sprintf("user-%07d", i) }
	for i := range remembered { // each group runs a task, then is idle
		adaptertest.Submit(b, e, key(i), adaptertest.OK).Wait()
	}
	for i := range running {
		adaptertest.Submit(b, e, key(i), gate.Task)
	}
	gate.WaitStarted(running)
	for i := range running { // each waits for a global permit
		adaptertest.Submit(b, e, key(i), adaptertest.OK)
	}
	h, err := New(e, Options{})
	if err != nil {
		b.Fatal(err)
	}
	measure := func(name string, snapshot func()) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				snapshot()
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		})
	}
	measure("active=1000", func() { h.publish() })
	measure("active=1000/every-group", func() {
		h.groups(e.AllGroupStats(), byOldestWait, defaultRows, "")
	})
	for i := running; i < 100*running; i++ {
		adaptertest.Submit(b, e, key(i), adaptertest.OK)
	}
	measure("active=100000", func() { h.publish() })
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var u syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &u) != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}
