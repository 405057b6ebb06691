package benchmarks

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/adapt"
)

// Workload sizes. RESULTS.md describes each workload; run.sh sets the
// -benchtime of each.
const (
	w1Batch = 1000 // tasks submitted before each Wait

	w2Groups   = 1000
	w2PerGroup = 4
	w2Global   = 64
	w2Batch    = 4 * w2Groups

	w3Tasks = 100_000

	w4Groups        = 100
	w4PerGroup      = 8
	w4Global        = 256
	w4TasksPerGroup = 40
	w4Sleep         = time.Millisecond

	w5Burst = 1000
)

// noop is the trivial task of W1 and W2.
var noop = NewTask(func() {})

// forEachPeer runs f as a sub-benchmark "peer=NAME" for every peer that can
// express c, and skips, with the peer's reason, every one that cannot.
func forEachPeer(b *testing.B, c Config, f func(b *testing.B, r Runner)) {
	for _, p := range Peers {
		b.Run("peer="+p.Name, func(b *testing.B) {
			r := newRunner(b, p, c)
			defer r.Close()
			f(b, r)
		})
	}
}

// BenchmarkW1Unlimited submits batches of 1 000 trivial tasks to one group
// with no limit, waiting for each batch.
func BenchmarkW1Unlimited(b *testing.B) {
	forEachPeer(b, Config{}, func(b *testing.B, r Runner) {
		benchThroughput(b, r, []string{"g"}, w1Batch)
	})
}

// BenchmarkW2Groups1000 submits batches of 4 000 trivial tasks round-robin
// over 1 000 groups of limit 4, under a global limit of 64.
func BenchmarkW2Groups1000(b *testing.B) {
	forEachPeer(b, Config{PerGroup: w2PerGroup, Global: w2Global}, func(b *testing.B, r Runner) {
		benchThroughput(b, r, groupKeys(w2Groups), w2Batch)
	})
}

// BenchmarkW2Listener is W2 for groupconc alone, with no listener and with a
// no-op one (a ListenerFuncs with no field set) installed. A listener must not
// change how permits are handed on between tasks, so the two stay within
// noise of each other: compare them from one run (-count 10, benchstat).
func BenchmarkW2Listener(b *testing.B) {
	for _, v := range []struct {
		name string
		l    groupconc.TaskLifecycleListener
	}{{"none", nil}, {"noop", groupconc.ListenerFuncs{}}} {
		b.Run("listener="+v.name, func(b *testing.B) {
			r, err := newGroupconcListening(Config{PerGroup: w2PerGroup, Global: w2Global}, v.l)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			benchThroughput(b, r, groupKeys(w2Groups), w2Batch)
		})
	}
}

// BenchmarkW2Adaptive is W2 for groupconc alone, with every group's limit
// adaptive and without: the hook that feeds each task's sample to the
// group's algorithm must cost W2 at most 5 % and no allocation (-count 10,
// benchstat). The algorithms see trivial tasks, so the limits stay at 4.
func BenchmarkW2Adaptive(b *testing.B) {
	for _, v := range []struct {
		name string
		a    groupconc.AdaptiveConfig
	}{
		{"off", groupconc.AdaptiveConfig{}},
		{"gradient", groupconc.AdaptiveConfig{New: adapt.GradientConfig{}.New}},
		{"aimd", groupconc.AdaptiveConfig{New: adapt.AIMDConfig{}.New}},
	} {
		b.Run("adaptive="+v.name, func(b *testing.B) {
			r, err := newGroupconcAdaptive(Config{PerGroup: w2PerGroup, Global: w2Global}, v.a)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			benchThroughput(b, r, groupKeys(w2Groups), w2Batch)
		})
	}
}

// benchThroughput reports the cost per task of submitting batch trivial
// tasks round-robin over keys and waiting for them (perTask).
func benchThroughput(b *testing.B, r Runner, keys []string, batch int) {
	perTask(b, batch, func() {
		for i := range batch {
			if err := r.Go(keys[i%len(keys)], noop); err != nil {
				b.Fatal(err)
			}
		}
		if err := r.Wait(); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkW3HotGroup submits batches of 100 000 trivial tasks at once to
// one group of limit 1, waiting for each batch: the cost per task of a hot
// group whose tasks queue behind each other.
func BenchmarkW3HotGroup(b *testing.B) {
	forEachPeer(b, Config{PerGroup: 1, Queue: true}, func(b *testing.B, r Runner) {
		benchThroughput(b, r, []string{"g"}, w3Tasks)
	})
}

// BenchmarkW3HotGroupPriorities is W3HotGroup for groupconc alone, in both
// isolation modes, through SubmitWith: every task at one priority
// (priorities=1); the five priorities in turn, task i at priority i mod 5
// (priorities=5), so that the line serves tasks far from the order they
// arrived in; and the five in runs of 1 000 tasks each (priorities=5-runs),
// so that it serves them in nearly that order. Compare them from one run
// (-count, benchstat).
func BenchmarkW3HotGroupPriorities(b *testing.B) {
	for _, peer := range []struct {
		name string
		mode groupconc.IsolationMode
	}{{"groupconc", groupconc.IsolationOff}, {"groupconc-fair", groupconc.IsolationFairShare}} {
		b.Run("peer="+peer.name, func(b *testing.B) {
			for _, c := range []struct {
				name       string
				priorities int
				run        int // tasks in a row at one priority
			}{{"1", 1, 1}, {"5", 5, 1}, {"5-runs", 5, 1000}} {
				b.Run("priorities="+c.name, func(b *testing.B) {
					benchHotPriorities(b, peer.mode, c.priorities, c.run)
				})
			}
		})
	}
}

func benchHotPriorities(b *testing.B, mode groupconc.IsolationMode, priorities, run int) {
	p, err := groupconc.NewPolicyBuilder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1).Build()
	if err != nil {
		b.Fatal(err)
	}
	e := groupconc.New(p)
	defer func() { _ = e.Shutdown(context.Background()) }()
	opts := make([]groupconc.SubmitOptions, priorities)
	for i := range opts {
		opts[i].Priority = groupconc.PriorityNormal
		if priorities > 1 {
			opts[i].Priority = groupconc.PriorityHighest + groupconc.Priority(i)
		}
	}
	handles := make([]*groupconc.TaskHandle[struct{}], w3Tasks)
	ctx := context.Background()
	perTask(b, w3Tasks, func() {
		for i := range handles {
			h, err := groupconc.SubmitWith(ctx, e, "g", "t", noop.Ctx, opts[i/run%priorities])
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

// BenchmarkW3QueuedMemory submits 100 000 tasks at once to one group of
// limit 1 whose first task blocks, and reports the memory each waiting task
// holds: the growth of HeapInuse+StackInuse, after a GC, per queued task.
func BenchmarkW3QueuedMemory(b *testing.B) {
	forEachPeer(b, Config{PerGroup: 1, Queue: true}, func(b *testing.B, r Runner) {
		b.ReportAllocs()
		var sum float64
		n := 0
		for b.Loop() {
			sum += queuedBytes(b, r)
			n++
		}
		b.ReportMetric(sum/float64(n), "bytes/queued-task")
	})
}

func queuedBytes(b *testing.B, r Runner) float64 {
	var started atomic.Int64
	first, gate := make(chan struct{}), make(chan struct{})
	t := NewTask(func() {
		if started.Add(1) == 1 {
			close(first)
			<-gate
		}
	})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range w3Tasks {
		if err := r.Go("g", t); err != nil {
			b.Fatal(err)
		}
	}
	<-first
	settle() // tasks waiting on goroutines of their own have parked
	runtime.GC()
	runtime.ReadMemStats(&after)
	close(gate)
	if err := r.Wait(); err != nil {
		b.Fatal(err)
	}
	grew := int64(after.HeapInuse+after.StackInuse) - int64(before.HeapInuse+before.StackInuse)
	return float64(grew) / w3Tasks
}

// BenchmarkW4Utilisation runs 4 000 tasks that sleep 1 ms, round-robin over
// 100 groups of limit 8 under a global limit of 256, and reports the share
// of the slots kept busy: the tasks' summed run time over wall time ×
// min(global, groups × limit).
func BenchmarkW4Utilisation(b *testing.B) {
	forEachPeer(b, Config{PerGroup: w4PerGroup, Global: w4Global}, func(b *testing.B, r Runner) {
		keys := groupKeys(w4Groups)
		var busy atomic.Int64
		t := NewTask(func() {
			start := time.Now()
			time.Sleep(w4Sleep) // the workload: 1 ms of real time holding a slot
			busy.Add(int64(time.Since(start)))
		})
		slots := float64(min(w4Global, w4Groups*w4PerGroup))
		run := func() float64 {
			busy.Store(0)
			start := time.Now()
			for i := range w4Groups * w4TasksPerGroup {
				if err := r.Go(keys[i%w4Groups], t); err != nil {
					b.Fatal(err)
				}
			}
			if err := r.Wait(); err != nil {
				b.Fatal(err)
			}
			return float64(busy.Load()) / (float64(time.Since(start)) * slots)
		}
		run() // groups exist before timing starts
		b.ReportAllocs()
		var sum float64
		n := 0
		for b.Loop() {
			sum += run()
			n++
		}
		b.ReportMetric(sum/float64(n), "utilisation")
	})
}

// BenchmarkW5CrossGroupOrder submits a burst of 1 000 tasks to group A, the
// first of which blocks, then one task to group B, under a global limit of 1
// and a group limit of 1, and reports how many A tasks start before B. The
// burst, and then B, settle into their waits before the first task is let go.
func BenchmarkW5CrossGroupOrder(b *testing.B) {
	forEachPeer(b, Config{PerGroup: 1, Global: 1, Queue: true}, func(b *testing.B, r Runner) {
		b.ReportAllocs()
		var sum float64
		n := 0
		for b.Loop() {
			sum += aBeforeB(b, r)
			n++
		}
		b.ReportMetric(sum/float64(n), "a-before-b")
	})
}

func aBeforeB(b *testing.B, r Runner) float64 {
	var seq, bAt atomic.Int64
	first, gate := make(chan struct{}), make(chan struct{})
	ta := NewTask(func() {
		if seq.Add(1) == 1 {
			close(first)
			<-gate
		}
	})
	tb := NewTask(func() { bAt.Store(seq.Add(1)) })
	for range w5Burst {
		if err := r.Go("A", ta); err != nil {
			b.Fatal(err)
		}
	}
	<-first
	settle()
	if err := r.Go("B", tb); err != nil {
		b.Fatal(err)
	}
	settle()
	close(gate)
	if err := r.Wait(); err != nil {
		b.Fatal(err)
	}
	return float64(bAt.Load() - 1)
}
