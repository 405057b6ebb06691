package benchmarks

import (
	"context"
	"fmt"
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
// isolation modes, through SubmitWith, with the tasks' priorities in five
// shapes, as batches of 100 000 to one group of limit 1:
//
//	one      every task at PriorityNormal
//	control  the same again: how far two runs of one shape differ here
//	sorted   the five in blocks of 20 000, highest first: the line serves
//	         them in the order they arrived, as at one priority
//	turn     task i at priority i mod 5: the line serves them far from
//	         the order they arrived in
//	runs     the five in turn in runs of 1 000
//
// The shapes take turns batch by batch in one process, so that what the
// machine does meanwhile falls on all of them; each runs on groups of its
// own, made in shuffled order, since where a group lies against the cache
// lines moves its cost at two CPUs by several per cent. It reports the
// CPU time per task of one, and each other shape's against it; control
// is near 1 in a sound run.
func BenchmarkW3HotGroupPriorities(b *testing.B) {
	for _, peer := range []struct {
		name string
		mode groupconc.IsolationMode
	}{{"groupconc", groupconc.IsolationOff}, {"groupconc-fair", groupconc.IsolationFairShare}} {
		b.Run("peer="+peer.name, func(b *testing.B) {
			benchPriorityShapes(b, peer.mode)
		})
	}
}

// priorityShapes are W3HotGroupPriorities' shapes: the priority of task i
// of a batch of n.
var priorityShapes = []struct {
	name string
	prio func(i, n int) groupconc.Priority
}{
	{"one", func(int, int) groupconc.Priority { return groupconc.PriorityNormal }},
	{"control", func(int, int) groupconc.Priority { return groupconc.PriorityNormal }},
	{"sorted", func(i, n int) groupconc.Priority { return groupconc.PriorityHighest + groupconc.Priority(i*5/n) }},
	{"turn", func(i, _ int) groupconc.Priority { return groupconc.PriorityHighest + groupconc.Priority(i%5) }},
	{"runs", func(i, _ int) groupconc.Priority { return groupconc.PriorityHighest + groupconc.Priority(i/1000%5) }},
}

func benchPriorityShapes(b *testing.B, mode groupconc.IsolationMode) {
	const groupsPerShape = 16
	p, err := groupconc.NewPolicyBuilder().Isolation(mode).DefaultMaxConcurrencyPerGroup(1).Build()
	if err != nil {
		b.Fatal(err)
	}
	e := groupconc.New(p)
	defer func() { _ = e.Shutdown(context.Background()) }()
	ctx := context.Background()
	handles := make([]*groupconc.TaskHandle[struct{}], w3Tasks)
	run := func(shape int, key string, n int) {
		for i := range n {
			opts := groupconc.SubmitOptions{Priority: priorityShapes[shape].prio(i, n)}
			h, err := groupconc.SubmitWith(ctx, e, key, "t", noop.Ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			handles[i] = h
		}
		for _, h := range handles[:n] {
			h.Wait()
		}
	}
	names := make([]string, len(priorityShapes))
	for i, s := range priorityShapes {
		names[i] = s.name
	}
	takeTurns(b, names, groupsPerShape, w3Tasks, func(shape, g int) func() {
		key := fmt.Sprintf("%s-%d", names[shape], g)
		run(shape, key, 1000) // the group exists, with a small batch of its shape
		return func() { run(shape, key, w3Tasks) }
	}, nil)
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
