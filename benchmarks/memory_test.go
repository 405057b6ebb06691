package benchmarks

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kobe/groupconc"
)

// Where the bytes of groupconc go; MEMORY.md quotes what these log (and
// the root package's TestHandleLayout).
//
//	go test -run TestGroupBytesBySite -v ./benchmarks
//	go test -run TestMillionKeysUnderIdleTTL -v ./benchmarks -args -scale

// TestGroupBytesBySite does what BenchmarkGroupFootprint does (10 000
// groups, each made by one task to a new key, of the default policy) with
// every allocation profiled, and lists the bytes still held afterwards by
// where they were allocated: per group, with the objects and their size
// class. It fails if those sites do not add up to the growth of the heap.
func TestGroupBytesBySite(t *testing.T) {
	const groups = 10_000
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = 1
	ctx := context.Background()
	e := groupconc.New(nil)
	before, heap0 := inUseBySite()
	for i := range groups {
		h, err := groupconc.Submit(ctx, e, "g"+strconv.Itoa(i), "t", func(context.Context) (int, error) { return 0, nil })
		require(t, err)
		h.Wait()
	}
	after, heap1 := inUseBySite()
	runtime.KeepAlive(e)
	require(t, e.Shutdown(ctx))

	type row struct {
		site           string
		bytes, objects int64
	}
	var rows []row
	var total int64
	for site, a := range after {
		b := before[site]
		if d := a.bytes - b.bytes; d > groups/10 { // more than 0.1 byte per group
			rows = append(rows, row{site, d, a.objects - b.objects})
			total += d
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Or(cmp.Compare(b.bytes, a.bytes), strings.Compare(a.site, b.site)) })
	var b strings.Builder
	fmt.Fprintf(&b, "%d groups; heap growth %.1f B/group, the sites below %.1f\n\n", groups, float64(heap1-heap0)/groups, float64(total)/groups)
	b.WriteString("| allocated at | B/group | objects/group | B/object |\n|---|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %.1f | %.2f | %.0f |\n", r.site, float64(r.bytes)/groups, float64(r.objects)/groups, float64(r.bytes)/max(float64(r.objects), 1))
	}
	t.Logf("\n%s", b.String())
	if raceEnabled() {
		return // the race detector's own allocations are not in the profile
	}
	if grew := heap1 - heap0; total < grew*9/10 || total > grew*11/10 {
		t.Errorf("the sites hold %d bytes, want within 10%% of the heap's growth, %d", total, grew)
	}
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

type held struct{ bytes, objects int64 }

// inUseBySite returns, once two collections have published the memory
// profile, the bytes and objects in use by allocation site (the first frame
// outside the runtime), and HeapAlloc.
func inUseBySite() (map[string]held, int64) {
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		recs = make([]runtime.MemProfileRecord, n+50)
		var ok bool
		if n, ok = runtime.MemProfile(recs, true); ok {
			recs = recs[:n]
			break
		}
	}
	sites := make(map[string]held)
	for _, r := range recs {
		s := site(r.Stack())
		h := sites[s]
		h.bytes += r.InUseBytes()
		h.objects += r.InUseObjects()
		sites[s] = h
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return sites, int64(m.HeapAlloc)
}

var shape = regexp.MustCompile(`\[[^\]]*\]`)

// site names the first frame of stack outside the runtime, as
// function:line.
func site(stack []uintptr) string {
	frames := runtime.CallersFrames(stack)
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "runtime.") && !strings.HasPrefix(f.Function, "internal/runtime/") {
			return fmt.Sprintf("%s:%d", shape.ReplaceAllString(shortName(f.Function), "[…]"), f.Line)
		}
		if !more {
			return "runtime"
		}
	}
}

var (
	scale    = flag.Bool("scale", false, "run TestMillionKeysUnderIdleTTL")
	scaleTTL = flag.Duration("scale.ttl", 100*time.Millisecond, "TestMillionKeysUnderIdleTTL's idle TTL; 0 remembers every group")
)

// TestMillionKeysUnderIdleTTL submits one trivial task to each of 1 000 000
// distinct keys, from one goroutine, in real time, to an executor that
// forgets groups idle for -scale.ttl, and reports the peak of the heap
// in use (HeapInuse, sampled every millisecond), of the live heap (as of
// the collection before) and of the groups remembered, with the wall and
// CPU time per key (CPU: the process's, on Unix; 0 elsewhere). It runs with
// -args -scale only: it takes seconds, and with -scale.ttl=0 over a GB.
func TestMillionKeysUnderIdleTTL(t *testing.T) {
	if !*scale {
		t.Skip("run with -args -scale")
	}
	const keys = 1_000_000
	p, err := groupconc.NewPolicyBuilder().IdleGroupTTL(*scaleTTL).Build()
	require(t, err)
	runtime.GC()
	base := sampleHeap()
	e := groupconc.New(p)
	ctx := context.Background()
	task := func(context.Context) (struct{}, error) { return struct{}{}, nil }

	stop := make(chan struct{})
	var sampler sync.WaitGroup
	var peak heapSample
	sampler.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			peak = peak.max(sampleHeap())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	start := time.Now()
	cpu0, _ := processCPU()
	peakGroups := 0
	for i := range keys {
		if _, err := groupconc.Submit(ctx, e, "k"+strconv.Itoa(i), "t", task); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 {
			peakGroups = max(peakGroups, e.Stats().Groups)
		}
	}
	elapsed := time.Since(start)
	cpu1, _ := processCPU()
	close(stop)
	sampler.Wait()
	peak = peak.max(sampleHeap())
	left := e.Stats().Groups
	require(t, e.Shutdown(ctx))

	mib := func(n uint64) float64 { return float64(n) / (1 << 20) }
	t.Logf("%d distinct keys in %v (%.0f ns/key, CPU %.0f ns/key), idle TTL %v: at most %d groups remembered (%d at the end); "+
		"peak HeapInuse %.1f MiB (%.1f MiB above the start), peak live heap %.1f MiB (%.1f above the start)",
		keys, elapsed.Round(time.Millisecond), float64(elapsed.Nanoseconds())/keys, float64((cpu1-cpu0).Nanoseconds())/keys, *scaleTTL, peakGroups, left,
		mib(peak.inUse), mib(peak.inUse-min(base.inUse, peak.inUse)), mib(peak.live), mib(peak.live-min(base.live, peak.live)))
}

// heapSample is what runtime/metrics tells of the heap: HeapInuse (objects
// and the unused part of their spans), and the live heap as marked by the
// last collection.
type heapSample struct{ inUse, live uint64 }

func (h heapSample) max(o heapSample) heapSample {
	return heapSample{max(h.inUse, o.inUse), max(h.live, o.live)}
}

var heapMetrics = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/gc/heap/live:bytes",
}

func sampleHeap() heapSample {
	s := make([]metrics.Sample, len(heapMetrics))
	for i, name := range heapMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	return heapSample{inUse: s[0].Value.Uint64() + s[1].Value.Uint64(), live: s[2].Value.Uint64()}
}

var pkgPath = regexp.MustCompile(`[\w.-]+(/[\w.-]+)*/`)

// shortName is a function's name without package paths.
func shortName(s string) string { return pkgPath.ReplaceAllString(s, "") }
