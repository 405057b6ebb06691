package promgc

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// durations counts the wait and run times of one group label value's tasks
// in striped histograms. An observation adds to one stripe picked at
// random, so tasks ending on different CPUs seldom write the same cache
// line. A scrape sums the stripes. A prometheus.Histogram keeps a single
// set of counters, which every CPU would fight over on every task.
//
// The stripes are counted from GOMAXPROCS when a label value's series is
// made. Go changes GOMAXPROCS at run time, with a container's CPU limit.
// Series made later follow it. A series made before only has a few more
// or fewer stripes per CPU. That costs contention, never a count.
//
// Each stripe is a run of words in one slice, the wait histogram's bucket
// counts (one per bound, then +Inf) and its sum in nanoseconds (the bits
// of a float64), the same for the run histogram, then a cache line of
// padding that no one writes.
type durations struct {
	seconds []float64 // bucket upper bounds, as given
	bounds  []int64   // the same, in nanoseconds
	words   []atomic.Uint64
	stride  int    // words per stripe
	mask    uint32 // stripes - 1
}

const (
	maxStripes = 32
	padWords   = 8 // a 64-byte cache line
)

func newDurations(seconds []float64) *durations {
	bounds := make([]int64, len(seconds))
	for i, b := range seconds {
		bounds[i] = int64(math.Round(min(b*1e9, math.MaxInt64/2)))
	}
	stripes := 1 << bits.Len(uint(min(runtime.GOMAXPROCS(0), maxStripes))-1) // GOMAXPROCS rounded up to a power of two
	stripes = min(stripes*2, maxStripes)
	stride := 2*(len(bounds)+2) + padWords
	return &durations{
		seconds: seconds,
		bounds:  bounds,
		words:   make([]atomic.Uint64, stripes*stride),
		stride:  stride,
		mask:    uint32(stripes - 1),
	}
}

// observe records one task's wait and run times.
func (d *durations) observe(wait, run time.Duration) {
	s := d.words[int(rand.Uint32()&d.mask)*d.stride:]
	n := len(d.bounds) + 2 // words per histogram
	d.add(s[:n], wait)
	d.add(s[n:2*n], run)
}

// add counts v in the histogram h, its bucket, then its sum.
func (d *durations) add(h []atomic.Uint64, v time.Duration) {
	ns := max(int64(v), 0)
	lo, hi := 0, len(d.bounds) // the first bound >= ns, or +Inf
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if d.bounds[mid] < ns {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	h[lo].Add(1)
	if ns == 0 {
		return
	}
	// The sum is a float64, as in a prometheus.Histogram. An integer of
	// nanoseconds overflows after 292 years of run time, which thousands
	// of tasks at once pile up within weeks, and the sum would go back. A
	// float64 only grows; it rounds past 104 days.
	sum := &h[len(h)-1]
	for {
		old := sum.Load()
		if sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+float64(ns))) {
			return
		}
	}
}

// collect sends the wait and run histograms, summed over the stripes. The
// stripes are read one by one while tasks may be adding, so the sum may be
// a few observations ahead of or behind the count.
func (d *durations) collect(ch chan<- prometheus.Metric, wait, run *prometheus.Desc, lv []string) {
	n := len(d.bounds) + 2
	for i, desc := range []*prometheus.Desc{wait, run} {
		counts := make([]uint64, n-1)
		var ns float64
		for s := 0; s < len(d.words); s += d.stride {
			h := d.words[s+i*n : s+(i+1)*n]
			for j := range counts {
				counts[j] += h[j].Load()
			}
			ns += math.Float64frombits(h[n-1].Load())
		}
		buckets := make(map[float64]uint64, len(d.bounds))
		var cum uint64
		for j, b := range d.seconds {
			cum += counts[j]
			buckets[b] = cum
		}
		total := cum + counts[n-2]
		ch <- prometheus.MustNewConstHistogram(desc, total, ns/1e9, buckets, lv...)
	}
}
