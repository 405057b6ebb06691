package httpgc

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kobe/groupconc"
)

// A timer samples the executor once per Interval, whether or not anyone
// watches. So a page that opens finds its sparklines full, and a row can
// tell how many tasks finished lately. Between samples no goroutine runs.
// A sample reads the totals and the groups a snapshot shows. Memory is
// bounded by History samples for the totals and for twice Rows groups.

// sample is a group's counts, or the totals, at one tick.
type sample struct {
	at                  time.Duration // since the handler's epoch
	waiting, running    int32
	succeeded, failed   uint64
	cancelled, rejected uint64
}

func (s sample) done() uint64 { return s.succeeded + s.failed + s.cancelled }

// series is a ring of samples, oldest first from next.
type series struct {
	buf   []sample // len is the capacity
	next  int      // where the next sample goes
	n     int      // how many are held
	shown uint64   // the last tick that found it among a snapshot's groups
}

func (s *series) add(x sample) {
	s.buf[s.next] = x
	s.next = (s.next + 1) % len(s.buf)
	s.n = min(s.n+1, len(s.buf))
}

// get returns the i-th sample held, oldest first.
func (s *series) get(i int) sample {
	return s.buf[(s.next-s.n+i+len(s.buf))%len(s.buf)]
}

// before returns the newest sample taken at or before at. Without one it
// returns the oldest sample, if the ring is full, since that goes back as
// far as history does. It reports false if neither exists.
func (s *series) before(at time.Duration) (sample, bool) {
	for i := s.n - 1; i >= 0; i-- {
		if x := s.get(i); x.at <= at {
			return x, true
		}
	}
	if s.n > 0 && s.n == len(s.buf) {
		return s.get(0), true
	}
	return sample{}, false
}

// waiting returns the waiting counts held, oldest first.
func (s *series) waiting() []int {
	out := make([]int, s.n)
	for i := range out {
		out[i] = int(s.get(i).waiting)
	}
	return out
}

// history is the handler's samples. Its lock is held to copy a few words
// per group, never while reading the executor.
type history struct {
	epoch time.Time
	size  int // samples per series; 0 keeps none
	most  int // groups kept at most

	mu     sync.Mutex
	timer  *time.Timer        // guarded by mu; nil when History is negative
	closed bool               // guarded by mu; set by Close
	tick   uint64             // guarded by mu; counts samples taken
	total  series             // guarded by mu
	groups map[string]*series // guarded by mu; by group key
}

// startHistory arms the sampler, which takes a first sample at once.
func (h *Handler) startHistory() {
	hs := &h.history
	hs.epoch = time.Now()
	if h.o.History < 0 {
		return
	}
	hs.size, hs.most = h.o.History, 2*h.o.Rows
	hs.total.buf = make([]sample, hs.size)
	hs.groups = map[string]*series{}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.timer = time.AfterFunc(0, h.sample)
}

// stopHistory stops the sampler. A sample under way finishes but arms
// nothing.
func (h *Handler) stopHistory() {
	hs := &h.history
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.closed = true
	if hs.timer != nil {
		hs.timer.Stop()
	}
}

func (h *Handler) now() time.Duration { return time.Since(h.history.epoch) }

// sample records the totals and the groups a snapshot would show. Groups
// kept from earlier ticks are sampled too, while they exist, so a group
// that leaves the list keeps a continuous history. It waits at least nine
// times as long as it took before the next, as the stream does. A
// DisplayKey that ends the goroutine (runtime.Goexit) ends one sample,
// and the next comes an Interval later.
func (h *Handler) sample() {
	start := time.Now()
	hs := &h.history
	sampled := false
	defer func() {
		if !sampled {
			hs.mu.Lock()
			defer hs.mu.Unlock()
			if !hs.closed {
				hs.timer.Reset(h.o.Interval)
			}
		}
	}()
	s := h.e.Stats()
	_, items := h.top(h.e.ActiveGroupStats(), byOldestWait, h.o.Rows, "")
	at := h.now()
	hs.mu.Lock()
	hs.tick++
	hs.total.add(sample{at: at, waiting: int32(s.Waiting), running: int32(s.Running),
		succeeded: s.Succeeded, failed: s.Failed, cancelled: s.Cancelled, rejected: s.Rejected})
	for i := range items {
		hs.record(items[i].st, at).shown = hs.tick
	}
	var others []string
	for key, ser := range hs.groups {
		if ser.shown != hs.tick {
			others = append(others, key)
		}
	}
	hs.mu.Unlock()

	// Groups no longer shown are read outside the lock, one by one.
	gone := others[:0]
	stats := make([]groupconc.GroupStats, 0, len(others))
	for _, key := range others {
		if st, ok := h.e.GroupStats(key); ok {
			stats = append(stats, st)
		} else {
			gone = append(gone, key)
		}
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for _, key := range gone {
		delete(hs.groups, key)
	}
	for _, st := range stats {
		if _, ok := hs.groups[st.GroupKey]; ok {
			hs.record(st, at)
		}
	}
	hs.trimLocked()
	sampled = true
	if !hs.closed {
		took := time.Since(start)
		hs.timer.Reset(max(h.o.Interval-took, 9*took))
	}
}

func (hs *history) record(st groupconc.GroupStats, at time.Duration) *series {
	ser := hs.groups[st.GroupKey]
	if ser == nil {
		ser = &series{buf: make([]sample, hs.size)}
		hs.groups[st.GroupKey] = ser
	}
	x := sample{at: at, waiting: int32(st.Waiting), running: int32(st.Running),
		succeeded: st.Succeeded, failed: st.Failed, cancelled: st.Cancelled, rejected: st.Rejected}
	if ser.n > 0 && x.fell(ser.get(ser.n-1)) {
		ser.madeAgain()
	}
	ser.add(x)
	return ser
}

// fell reports whether a counter of x is below last's. Counters only grow,
// so the group was forgotten or evicted and made again between the two.
func (x sample) fell(last sample) bool {
	return x.succeeded < last.succeeded || x.failed < last.failed || x.cancelled < last.cancelled || x.rejected < last.rejected
}

// madeAgain zeroes the counters of the samples held. The group made again
// had none at their times, so a row's "recent" counts its tasks alone. The
// waiting counts stay, as the row's history is the key's.
func (s *series) madeAgain() {
	for i := range s.buf {
		s.buf[i].succeeded, s.buf[i].failed, s.buf[i].cancelled, s.buf[i].rejected = 0, 0, 0, 0
	}
}

// trimLocked forgets the groups shown longest ago, beyond most.
func (hs *history) trimLocked() {
	over := len(hs.groups) - hs.most
	if over <= 0 {
		return
	}
	keys := slices.Collect(maps.Keys(hs.groups))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(hs.groups[a].shown, hs.groups[b].shown), strings.Compare(a, b))
	})
	for _, key := range keys[:over] {
		delete(hs.groups, key)
	}
}

// totalJSON is a snapshot's "history", the totals, one sample per Interval.
type totalJSON struct {
	IntervalMs int64 `json:"intervalMs"`
	Waiting    []int `json:"waiting"`
	Running    []int `json:"running"`
}

func (h *Handler) totalHistory() totalJSON {
	hs := &h.history
	hs.mu.Lock()
	defer hs.mu.Unlock()
	out := totalJSON{IntervalMs: h.o.Interval.Milliseconds(), Waiting: hs.total.waiting(), Running: make([]int, hs.total.n)}
	for i := range out.Running {
		out.Running[i] = int(hs.total.get(i).running)
	}
	return out
}
