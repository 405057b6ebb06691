package benchmarks

import (
	"runtime"
	"testing"
	"time"

	"github.com/kobe/groupconc"
)

// Deep backlogs: the tasks of a group wait in hundreds or thousands, not in
// the handful W2 and W3HotGroup leave behind. MEMORY.md gives the numbers.
const (
	deepTasks = 100_000 // W3DeepBacklog: queued behind the gate
	deepW2    = 100_000 // W2DeepBacklog: streamed, 100 per group
)

// forNamedPeers is forEachPeer for the peers named, in that order.
func forNamedPeers(b *testing.B, names []string, c Config, f func(b *testing.B, r Runner)) {
	for _, name := range names {
		i := peerIndex(b, name)
		b.Run("peer="+name, func(b *testing.B) {
			r := newRunner(b, Peers[i], c)
			defer r.Close()
			f(b, r)
		})
	}
}

func peerIndex(tb testing.TB, name string) int {
	for i, p := range Peers {
		if p.Name == name {
			return i
		}
	}
	tb.Fatalf("no peer %q", name)
	return -1
}

// BenchmarkW3DeepBacklog queues 100 000 trivial tasks in one group of limit
// 1 behind a first task that holds the group's slot until a gate opens, so
// that every task waits before any runs; then opens the gate and waits for
// the drain. Next to W3HotGroup, where the group's tasks start as they are
// submitted and the line stays short, it reports the cost of a deep line:
// ns/task over submit and drain, and each phase alone (submit-ns/task,
// drain-ns/task, both per queued task).
func BenchmarkW3DeepBacklog(b *testing.B) {
	peers := []string{"groupconc", "groupconc-user", "pond"}
	forNamedPeers(b, peers, Config{PerGroup: 1, Queue: true}, func(b *testing.B, r Runner) {
		perTaskPhases(b, deepTasks, func() phases { return deepBacklog(b, r) })
	})
}

// deepBacklog runs one round of W3DeepBacklog on r.
func deepBacklog(b *testing.B, r Runner) phases {
	started, gate := make(chan struct{}), make(chan struct{})
	first := NewTask(func() {
		close(started)
		<-gate
	})
	if err := r.Go("g", first); err != nil {
		b.Fatal(err)
	}
	<-started // the gate task holds the group's one slot: the rest queue
	t0 := time.Now()
	for range deepTasks {
		if err := r.Go("g", noop); err != nil {
			b.Fatal(err)
		}
	}
	t1 := time.Now()
	close(gate)
	if err := r.Wait(); err != nil {
		b.Fatal(err)
	}
	return phases{submit: t1.Sub(t0), drain: time.Since(t1), waiting: -1} // all of them
}

// phases is what one round of a deep-backlog workload took: submitting its
// tasks, then waiting for the rest to end; and the tasks waiting as the
// last was submitted (-1: not known).
type phases struct {
	submit, drain time.Duration
	waiting       int
}

// perTaskPhases is perTask for rounds of batch tasks that
// report their phases: time, allocations and bytes per task, each phase's
// time per task, and the process's CPU time per task (cpu-ns/task, on Unix:
// all its threads, the garbage collector's included).
func perTaskPhases(b *testing.B, batch int, run func() phases) {
	run() // the groups, and any pooled workers, exist before timing starts
	b.ReportAllocs()
	var sum phases
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0, cpuOK := processCPU()
	n := 0
	for b.Loop() {
		p := run()
		sum.submit += p.submit
		sum.drain += p.drain
		sum.waiting += p.waiting
		n++
	}
	cpu1, _ := processCPU()
	runtime.ReadMemStats(&after)
	tasks := float64(n * batch)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/tasks, "ns/task")
	if cpuOK {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/tasks, "cpu-ns/task")
	}
	b.ReportMetric(float64(sum.submit.Nanoseconds())/tasks, "submit-ns/task")
	b.ReportMetric(float64(sum.drain.Nanoseconds())/tasks, "drain-ns/task")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/tasks, "allocs/task")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/tasks, "B/task")
	if sum.waiting >= 0 {
		b.ReportMetric(float64(sum.waiting)/float64(n), "backlog")
	}
}

// BenchmarkW2DeepBacklog is W2's limits (1 000 groups of limit 4 under a
// global limit of 64) with 100 000 trivial tasks submitted round-robin from
// one goroutine, which waits once at the end rather than after every
// 4 000, so that groups queue deeper than in W2. With fill=streamed the
// tasks start as they come, and the backlog is what the submitter gets
// ahead of the drain (reported as backlog: the tasks waiting as the last
// was submitted, in the tens per group); with fill=gated, 64 first tasks,
// one in each of 64 groups, hold every global permit until the last task
// is submitted, so all 100 000 wait, 100 per group, before any runs (as in
// W3DeepBacklog). Under IsolationOff the waiting tasks are in the global
// line; under IsolationFairShare in their group's line, the first four of
// each group in the fair line. It reports ns/task, and submit-ns/task and
// drain-ns/task: the submitting, then the wait for what was left.
func BenchmarkW2DeepBacklog(b *testing.B) {
	c := Config{PerGroup: w2PerGroup, Global: w2Global}
	for _, m := range []struct {
		name string
		new  func(Config) (Runner, error)
	}{{"off", newGroupconc}, {"fair", newGroupconcFair}} {
		for _, gated := range []bool{false, true} {
			fill := map[bool]string{false: "streamed", true: "gated"}[gated]
			b.Run("mode="+m.name+"/fill="+fill, func(b *testing.B) {
				r, err := m.new(c)
				if err != nil {
					b.Fatal(err)
				}
				defer r.Close()
				keys := groupKeys(w2Groups)
				e := r.(*groupconcPeer).e
				perTaskPhases(b, deepW2, func() phases { return w2Deep(b, r, e, keys, gated) })
			})
		}
	}
}

// w2Deep runs one round of W2DeepBacklog on r, whose executor is e.
func w2Deep(b *testing.B, r Runner, e *groupconc.GroupExecutor, keys []string, gated bool) phases {
	gate := make(chan struct{})
	if gated {
		hold := NewTask(func() { <-gate })
		for i := range w2Global {
			if err := r.Go(keys[i], hold); err != nil {
				b.Fatal(err)
			}
		}
	}
	t0 := time.Now()
	for i := range deepW2 {
		if err := r.Go(keys[i%w2Groups], noop); err != nil {
			b.Fatal(err)
		}
	}
	t1 := time.Now()
	waiting := e.Stats().Waiting
	close(gate)
	if err := r.Wait(); err != nil {
		b.Fatal(err)
	}
	return phases{submit: t1.Sub(t0), drain: time.Since(t1), waiting: waiting}
}

// cpuTime is processCPU's time, 0 where the system cannot tell.
func cpuTime() time.Duration {
	d, _ := processCPU()
	return d
}
