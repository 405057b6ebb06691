package adapt

// levels keeps the run time at each of the few concurrencies a limit ran
// its backend at lately, as a moving average per level. The least of them
// is the baseline, the run time without queueing. Under overload the limit
// moves about the backend's capacity, and the levels at or below it show
// the baseline. Each is an average over several windows, so the least of
// them is less biased by chance than the least window would be. A level
// not seen for a while is dropped. So a baseline that grew (slower work,
// not a busier backend) takes over in time. Its zero value is empty.
type levels struct {
	e   [levelCap]level
	now int // windows added
	// kept is the least settled level pushed out for a newer one. The
	// limit may run at many levels above the capacity for a while, and
	// the baseline must not be forgotten for that alone.
	kept level
}

type level struct {
	n     int     // the concurrency, rounded, or 0 if unused
	r     float64 // its moving average of the windows' run time
	count int     // windows averaged
	last  int     // now when it was last added to
}

// levelCap bounds the levels kept. The limit moves by little once settled.
const levelCap = 8

// settled is how many windows a level must average before it counts. One
// window that ran fast by chance must not set the baseline.
const settled = 3

// add averages the run time r of a window at concurrency n into its
// level, with weight w.
func (ls *levels) add(n int, r, w float64) {
	ls.now++
	slot := 0
	for i := range ls.e {
		if ls.e[i].n == n {
			slot = i
			break
		}
		if ls.e[i].last < ls.e[slot].last {
			slot = i // the least recently used, unused ones first
		}
	}
	l := &ls.e[slot]
	if l.n != n {
		if l.count >= settled && (ls.kept.n == 0 || l.r < ls.kept.r || ls.now-ls.kept.last > levelCap*settled) {
			ls.kept = *l
		}
		*l = level{n: n}
	}
	// A plain mean of its first windows, so that no one of them weighs
	// more than the others, then a moving average.
	l.count++
	l.r += (r - l.r) * max(w, 1/float64(l.count))
	l.last = ls.now
}

// seed sets the level of concurrency n to the run time r, as if averaged
// over settled windows. r was measured without queueing.
func (ls *levels) seed(n int, r float64) {
	ls.add(n, r, 1)
	for i := range ls.e {
		if ls.e[i].n == n {
			ls.e[i].count = max(ls.e[i].count, settled)
		}
	}
}

// baseline returns the least run time of the levels seen in the last age
// windows. It takes those averaged over settled windows or more, if any.
// It returns 0 if there is no level.
func (ls *levels) baseline(age int) float64 {
	var b, once float64
	for _, l := range ls.e {
		if l.n == 0 || ls.now-l.last >= age {
			continue
		}
		if l.count >= settled && (b == 0 || l.r < b) {
			b = l.r
		}
		if once == 0 || l.r < once {
			once = l.r
		}
	}
	if b == 0 {
		b = once
	}
	// The kept level is a guard against a baseline lost, not a finer
	// measure. It is biased low by chance, as the least of several is.
	if k := ls.kept; k.n != 0 && ls.now-k.last < age && (b == 0 || k.r*(1+keptMargin) < b) {
		return k.r
	}
	return b
}

// keptMargin is how much faster the kept level must be than the levels in
// use to stand for the baseline.
const keptMargin = 0.25

// reset forgets every level.
func (ls *levels) reset() { *ls = levels{now: ls.now} }
