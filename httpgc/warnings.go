package httpgc

import (
	"sync"
	"time"

	"github.com/kobe/groupconc"
)

// warningJSON is a pressure warning as the page shows it.
type warningJSON struct {
	Group        string    `json:"group"`
	Trigger      string    `json:"trigger"`
	Waiting      int       `json:"waiting"`
	OldestWaitMs int64     `json:"oldestWaitMs"`
	Limit        limit     `json:"limit"`    // the group's MaxConcurrency when it fired
	InFlight     int       `json:"inFlight"` // the group's InFlight when it fired
	Suppressed   int       `json:"suppressed"`
	At           time.Time `json:"at"`
}

// ring keeps the last warnings. Its zero value holds none. It is safe for
// concurrent use, and its lock is held only to copy a few words.
type ring struct {
	mu      sync.Mutex
	buf     []warningJSON // guarded by mu; len is the capacity
	next    int           // guarded by mu; where the next warning goes
	n       int           // guarded by mu; how many are held
	version uint64        // guarded by mu; counts warnings ever added
}

func (r *ring) add(w warningJSON) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf[r.next] = w
	r.next = (r.next + 1) % len(r.buf)
	r.n = min(r.n+1, len(r.buf))
	r.version++
}

// list returns the warnings held, newest first, and the version they are.
func (r *ring) list() ([]warningJSON, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]warningJSON, r.n)
	for i := range out {
		out[i] = r.buf[(r.next-1-i+2*len(r.buf))%len(r.buf)]
	}
	return out, r.version
}

func (r *ring) current() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.version
}

// PressureWarning records w for the page's list of recent warnings. It reads
// the group's concurrency limit and in-flight count as w arrives. New has the
// handler watch the executor's warnings, so there is no need to call it. A
// policy function that still passes warnings here records each one twice.
// It never blocks. It reads the group's stats and copies a few words under a
// lock of the handler's own, and takes no lock of the executor. The page
// learns of it at the stream's next snapshot. A nil *Handler ignores w, so a
// policy may name it before New has returned.
func (h *Handler) PressureWarning(w groupconc.PressureWarning) {
	if h == nil {
		return
	}
	out := warningJSON{
		Group:        h.display(w.GroupKey),
		Trigger:      w.Trigger.String(),
		Waiting:      w.Waiting,
		OldestWaitMs: w.OldestWait.Milliseconds(),
		Suppressed:   w.Suppressed,
		At:           w.At,
	}
	if st, ok := h.e.GroupStats(w.GroupKey); ok {
		out.Limit, out.InFlight = limit(st.MaxConcurrency), st.InFlight
	}
	h.warnings.add(out)
}
