package benchmarks

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// limitConfigs are the Configs the workloads use, so that every limit a
// benchmark relies on is checked here first.
var limitConfigs = []struct {
	name string
	c    Config
}{
	{"W1-none", Config{}},
	{"W2-4x64", Config{PerGroup: 4, Global: 64}},
	{"W3-1-queue", Config{PerGroup: 1, Queue: true}},
	{"W4-8x256", Config{PerGroup: 8, Global: 256}},
	{"W5-1x1-queue", Config{PerGroup: 1, Global: 1, Queue: true}},
}

// TestLimits checks that every peer enforces the limits it claims: gated
// tasks pile up until the expected number runs at once, and the gauges
// inside the tasks show that number reached and never exceeded, per group
// and overall. Two shapes per Config:
//
//   - groups-fill: twice as many tasks per group as its limit, but (under a
//     global limit) no more tasks in all than global permits; every group
//     must reach its limit, and none pass it.
//   - global-binds: as many tasks per group as its limit, in twice as many
//     group slots as global permits; the total must reach the global limit
//     and never pass it.
//
// With Queue, the gate also stays shut until Go has returned for every
// task, so a peer whose Go waits for a free slot never finishes and fails.
func TestLimits(t *testing.T) {
	for _, p := range Peers {
		for _, lc := range limitConfigs {
			c := lc.c
			shapes := []string{"groups-fill"}
			if c.Global > 0 {
				shapes = append(shapes, "global-binds")
			}
			for _, shape := range shapes {
				t.Run(fmt.Sprintf("%s/%s/%s", p.Name, lc.name, shape), func(t *testing.T) {
					r := newRunner(t, p, c)
					defer r.Close()
					checkLimits(t, r, c, shape == "global-binds")
				})
			}
		}
	}
}

func checkLimits(t *testing.T, r Runner, c Config, globalBinds bool) {
	var groups, perGroup, tasksPerGroup int
	var want int64
	switch {
	case c.PerGroup == 0: // no limit: 8 groups of 8 must all run at once
		groups, perGroup, tasksPerGroup = 8, 8, 8
		want = 64
	case globalBinds:
		// One task per group slot, twice as many slots as global permits:
		// every task that gets a global permit can also get its group's.
		perGroup = c.PerGroup
		groups, tasksPerGroup = 2*c.Global/perGroup, perGroup
		want = int64(c.Global)
	default:
		// Twice as many tasks per group as its limit, and (with a global
		// limit) no more tasks in all than global permits, so that a
		// peer taking the global permit first never holds one for a task
		// stuck behind its group's limit.
		perGroup = c.PerGroup
		groups, tasksPerGroup = 8, 2*perGroup
		if c.Global > 0 {
			groups = max(1, c.Global/tasksPerGroup)
		}
		want = int64(groups * perGroup)
	}

	var (
		total   gauge
		per     = make([]gauge, groups)
		ran     atomic.Int64
		reached atomic.Bool
		open    = make(chan struct{})
		conds   atomic.Int32 // conditions still to meet before open closes
	)
	conds.Store(1)
	if c.Queue {
		conds.Store(2)
	}
	meet := func() {
		if conds.Add(-1) == 0 {
			close(open)
		}
	}
	keys := groupKeys(groups)
	tasks := make([]*Task, groups)
	for i := range tasks {
		g := &per[i]
		tasks[i] = NewTask(func() {
			g.inc() // before total: once total reaches want, so has every group
			n := total.inc()
			if n == want && reached.CompareAndSwap(false, true) {
				meet()
			}
			<-open
			ran.Add(1)
			total.dec()
			g.dec()
		})
	}

	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range groups * tasksPerGroup {
			if err := r.Go(keys[i%groups], tasks[i%groups]); err != nil {
				done <- err
				return
			}
		}
		if c.Queue {
			meet()
		}
		done <- r.Wait()
	})
	// The timeout only turns a hang (a limit never reached, or a Go that
	// blocks where Queue forbids it) into a failure; nothing waits on time.
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("tasks never finished: %d of %d ran, %d at once at most, want %d at once (Go blocked or limit not reached)",
			ran.Load(), groups*tasksPerGroup, total.max.Load(), want)
	}
	wg.Wait()

	if got := ran.Load(); got != int64(groups*tasksPerGroup) {
		t.Errorf("tasks run: got %d, want %d", got, groups*tasksPerGroup)
	}
	if got := total.max.Load(); got != want {
		t.Errorf("most tasks running at once: got %d, want %d", got, want)
	}
	for i := range per {
		got := per[i].max.Load()
		switch {
		case got > int64(perGroup) && c.PerGroup > 0:
			t.Errorf("group %d: most running at once: got %d, want at most %d", i, got, perGroup)
		case !globalBinds && got != int64(perGroup):
			t.Errorf("group %d: most running at once: got %d, want %d", i, got, perGroup)
		}
	}
}
