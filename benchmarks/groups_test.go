package benchmarks

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
)

// BenchmarkGroupFootprint measures the memory a remembered group costs: the
// heap held after 10 000 groups have each run one task, per group.
func BenchmarkGroupFootprint(b *testing.B) {
	const groups = 10_000
	ctx := context.Background()
	for b.Loop() {
		e := groupconc.New(nil)
		before := heapInUse()
		for i := range groups {
			h, err := groupconc.Submit(ctx, e, "g"+strconv.Itoa(i), "t", func(context.Context) (int, error) { return 0, nil })
			if err != nil {
				b.Fatal(err)
			}
			h.Wait()
		}
		after := heapInUse()
		b.ReportMetric(float64(after-before)/groups, "B/group")
		runtime.KeepAlive(e)
		_ = e.Shutdown(ctx)
	}
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestIdleGroupsStayBoundedUnderUnboundedKeys submits 1 000 000 tasks, each
// to a key never seen before, 1 000 keys every 10ms of fake time, to an
// executor that forgets groups idle for 100ms. The groups it remembers, and
// the heap, stay bounded by what arrives in about two TTLs.
//
//	go test -run IdleGroups -v ./benchmarks
func TestIdleGroupsStayBoundedUnderUnboundedKeys(t *testing.T) {
	const (
		keys    = 1_000_000
		perTick = 1_000
		tick    = 10 * time.Millisecond
		ttl     = 100 * time.Millisecond
	)
	synctest.Test(t, func(t *testing.T) {
		p, err := groupconc.NewPolicyBuilder().IdleGroupTTL(ttl).Build()
		require(t, err)
		e := groupconc.New(p)
		ctx := context.Background()
		peakGroups, peakHeap := 0, int64(0)
		base := heapInUse()
		for i := 0; i < keys; i += perTick {
			for j := i; j < i+perTick; j++ {
				_, err := groupconc.Submit(ctx, e, fmt.Sprint("k", j), "t", func(context.Context) (int, error) { return 0, nil })
				require(t, err)
			}
			synctest.Wait()
			peakGroups = max(peakGroups, e.Stats().Groups)
			if i%(100*perTick) == 0 {
				peakHeap = max(peakHeap, heapInUse()-base)
			}
			time.Sleep(tick) // fake clock: the next arrivals
		}
		time.Sleep(3 * ttl)
		after := e.Stats().Groups
		t.Logf("%d distinct keys, TTL %v: at most %d groups remembered, heap peak %.1f MiB above the start, %d groups left after 3 TTLs idle",
			keys, ttl, peakGroups, float64(peakHeap)/(1<<20), after)
		if limit := int(2*ttl/tick+2) * perTick; peakGroups > limit {
			t.Errorf("peak %d groups, want <= %d (what arrives in 2 TTLs)", peakGroups, limit)
		}
		if after != 0 {
			t.Errorf("%d groups left after 3 idle TTLs, want 0", after)
		}
		require(t, e.Shutdown(ctx))
	})
}
