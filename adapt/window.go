package adapt

import (
	"cmp"
	"time"
)

// window collects one window of samples. It keeps their run times, and
// apart those of the tasks that started at a full limit. It also sums
// the running count at their start and counts the overload signals. Its
// zero value is empty. It is not safe for concurrent use.
type window struct {
	start   int64 // when its first sample ended, in Unix nanoseconds
	all     runs  // every sample's run time
	full    runs  // the run times of tasks that started at a full limit
	running int64 // the samples' running counts summed
	over    int   // Overload samples
	held    int   // samples whose group was held back (see Gradient)
}

// runs keeps run times up to a fixed number. Past it, every other one is
// dropped, and then only every second, fourth ... one is kept. So it
// stays an even sample of the whole window.
type runs struct {
	d      []time.Duration
	stride int // keep one sample in stride, a power of two
	seen   int // samples given, kept or not
}

// windowCap bounds the run times kept. That is enough for a percentile
// within a few per cent, and little enough to select from once a window.
const windowCap = 128

func (r *runs) add(run time.Duration) {
	if r.seen == 0 {
		r.stride = 1
		if r.d == nil {
			r.d = make([]time.Duration, 0, windowCap)
		}
	}
	if r.seen&(r.stride-1) == 0 {
		if len(r.d) == windowCap {
			// Keep every other one, and from now on every other one
			// of those kept so far.
			for i := range windowCap / 2 {
				r.d[i] = r.d[2*i]
			}
			r.d = r.d[:windowCap/2]
			r.stride *= 2
		}
		if r.seen&(r.stride-1) == 0 {
			r.d = append(r.d, run)
		}
	}
	r.seen++
}

// percentile returns the q-quantile (0 < q < 1) of the run times kept,
// reordering them.
func (r *runs) percentile(q float64) time.Duration {
	k := int(q * float64(len(r.d)))
	k = min(max(k, 0), len(r.d)-1)
	return selectKth(r.d, k)
}

func (r *runs) reset() {
	r.d = r.d[:0]
	r.seen = 0
}

// add puts one sample in the window. Its task ended at end and ran for
// run. It started with running tasks under limit, and signalled sig. held
// says its group was held back when it started.
func (w *window) add(end int64, run time.Duration, running, limit int, sig Signal, held bool) {
	if w.all.seen == 0 {
		w.start = end
	}
	w.all.add(run)
	if running >= limit {
		w.full.add(run)
	}
	w.running += int64(running)
	if sig == Overload {
		w.over++
	}
	if held {
		w.held++
	}
}

// due reports whether the window, which must last at least d and hold at
// least n samples, is complete when a sample ends at end (Unix
// nanoseconds, as add's).
func (w *window) due(end int64, d time.Duration, n int) bool {
	return w.all.seen >= n && end-w.start >= int64(d)
}

// meanRunning returns the mean running count at the samples' start.
func (w *window) meanRunning() float64 { return float64(w.running) / float64(w.all.seen) }

// reset empties the window, keeping its buffers.
func (w *window) reset() {
	w.all.reset()
	w.full.reset()
	w.running, w.over, w.held = 0, 0, 0
}

// selectKth returns the k-th smallest of s (from 0), reordering s. It is
// a quickselect with the median of three as pivot and a three-way
// partition, so many equal values cost no more than distinct ones.
func selectKth[E cmp.Ordered](s []E, k int) E {
	lo, hi := 0, len(s)-1
	for lo < hi {
		a, b, c := s[lo], s[lo+(hi-lo)/2], s[hi]
		pivot := max(min(a, b), min(max(a, b), c))
		// s[lo:lt] < pivot, s[lt:i] == pivot, s[gt+1:hi+1] > pivot.
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch {
			case s[i] < pivot:
				s[lt], s[i] = s[i], s[lt]
				lt++
				i++
			case s[i] > pivot:
				s[i], s[gt] = s[gt], s[i]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return pivot
		}
	}
	return s[k]
}
