package groupconc_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kobe/groupconc"
)

// benchGroups is how many groups the executor knows in these benchmarks.
const benchGroups = 10_000

// pollEvery is how often the poller goroutine of the Submit benchmarks
// wakes up.
const pollEvery = 10 * time.Millisecond

func benchNoopStruct(context.Context) (struct{}, error) { return struct{}{}, nil }

// benchWarm runs one task in each of n groups, so that e knows them all, and
// returns their keys.
func benchWarm(b *testing.B, e *groupconc.GroupExecutor, n int) []string {
	b.Helper()
	keys := make([]string, n)
	hs := make([]*groupconc.TaskHandle[struct{}], n)
	for i := range keys {
		keys[i] = "group-" + strconv.Itoa(i)
		h, err := groupconc.Submit(context.Background(), e, keys[i], "warm", benchNoopStruct)
		if err != nil {
			b.Fatal(err)
		}
		hs[i] = h
	}
	for _, h := range hs {
		h.Wait()
	}
	if got := e.Stats().Groups; got != n {
		b.Fatalf("Stats().Groups = %d, want %d", got, n)
	}
	return keys
}

// benchShutdown waits for e's tasks and stops it.
func benchShutdown(b *testing.B, e *groupconc.GroupExecutor) {
	b.Helper()
	if err := e.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkStats10000Groups measures one Stats call on an executor that
// knows 10 000 idle groups.
func BenchmarkStats10000Groups(b *testing.B) {
	e := groupconc.New(nil)
	defer benchShutdown(b, e)
	benchWarm(b, e, benchGroups)
	b.ReportAllocs()
	for b.Loop() {
		if s := e.Stats(); s.Groups != benchGroups {
			b.Fatalf("Stats().Groups = %d, want %d", s.Groups, benchGroups)
		}
	}
}

// BenchmarkSubmitWait10000Groups measures Submit followed by Wait from
// GOMAXPROCS goroutines at once, spread over 10 000 known groups, with one
// more goroutine waking every 10 ms (100 times a second, far more often than
// a metrics scrape) without taking a snapshot. It is the baseline of
// BenchmarkSubmitWait10000GroupsWhileStatsPolled, which differs only in that
// goroutine calling Stats: the difference is what the snapshots cost the
// submitters. (The waking goroutine itself costs them something on a small
// machine, Stats or not, which is why both benchmarks have it.)
func BenchmarkSubmitWait10000Groups(b *testing.B) {
	benchSubmitWaitGroups(b, false)
}

// BenchmarkSubmitWait10000GroupsWhileStatsPolled is
// BenchmarkSubmitWait10000Groups with a Stats snapshot at every wake-up.
func BenchmarkSubmitWait10000GroupsWhileStatsPolled(b *testing.B) {
	benchSubmitWaitGroups(b, true)
}

func benchSubmitWaitGroups(b *testing.B, poll bool) {
	e := groupconc.New(nil)
	defer benchShutdown(b, e)
	keys := benchWarm(b, e, benchGroups)

	var (
		stop  = make(chan struct{})
		wg    sync.WaitGroup
		polls atomic.Int64
	)
	wg.Go(func() {
		tick := time.NewTicker(pollEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if poll {
				e.Stats()
				polls.Add(1)
			}
		}
	})
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			key := keys[next.Add(1)%benchGroups]
			h, err := groupconc.Submit(ctx, e, key, "task", benchNoopStruct)
			if err != nil {
				b.Error(err)
				return
			}
			if r := h.Wait(); r.Status != groupconc.StatusSuccess {
				b.Errorf("status %v, want SUCCESS (err %v)", r.Status, r.Err)
				return
			}
		}
	})
	b.StopTimer()
	close(stop)
	wg.Wait()
	if poll {
		b.ReportMetric(float64(polls.Load())/b.Elapsed().Seconds(), "polls/s")
	}
}
