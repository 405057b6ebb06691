package adapt

import (
	"cmp"
	"time"
)

// window collects one window of samples: their run times, kept up to a
// fixed number (past it, every other one is dropped and then only every
// second, fourth ... sample is kept, so the window stays an even sample
// of its whole span), and the mean running count at their start. Its zero
// value is empty; it is not safe for concurrent use.
type window struct {
	start   int64           // when its first sample ended, in Unix nanoseconds
	runs    []time.Duration // run times kept
	stride  int             // keep one sample in stride, a power of two
	seen    int             // samples given, kept or not
	running int64           // their running counts summed
}

// windowCap bounds the run times a window keeps: enough for a percentile
// within a few per cent, little enough to select from once per window.
const windowCap = 128

// add puts one sample in the window.
func (w *window) add(end int64, run time.Duration, running int) {
	if w.seen == 0 {
		w.start = end
		w.stride = 1
		if w.runs == nil {
			w.runs = make([]time.Duration, 0, windowCap)
		}
	}
	if w.seen&(w.stride-1) == 0 {
		if len(w.runs) == windowCap {
			// Keep every other one, and from now on every other one
			// of those kept so far.
			for i := range windowCap / 2 {
				w.runs[i] = w.runs[2*i]
			}
			w.runs = w.runs[:windowCap/2]
			w.stride *= 2
		}
		if w.seen&(w.stride-1) == 0 {
			w.runs = append(w.runs, run)
		}
	}
	w.seen++
	w.running += int64(running)
}

// due reports whether the window, which must last at least d and hold at
// least n samples, is complete when a sample ends at end (Unix
// nanoseconds, as add's).
func (w *window) due(end int64, d time.Duration, n int) bool {
	return w.seen >= n && end-w.start >= int64(d)
}

// meanRunning returns the mean running count at the samples' start.
func (w *window) meanRunning() float64 { return float64(w.running) / float64(w.seen) }

// percentile returns the q-quantile (0 < q < 1) of the run times kept,
// reordering them.
func (w *window) percentile(q float64) time.Duration {
	k := int(q * float64(len(w.runs)))
	k = min(max(k, 0), len(w.runs)-1)
	return selectKth(w.runs, k)
}

// reset empties the window, keeping its buffer.
func (w *window) reset() {
	w.runs = w.runs[:0]
	w.seen, w.running = 0, 0
}

// selectKth returns the k-th smallest of s (from 0), reordering s: a
// quickselect with the median of three as pivot and a three-way partition,
// so that many equal values cost no more than distinct ones.
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
