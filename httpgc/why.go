package httpgc

import (
	"fmt"
	"time"

	"github.com/kobe/groupconc"
)

// Why a group's tasks wait, as a row's "why" says it. The first rule that
// holds decides.
//
//	"paused"                  the group, or an ancestor, is paused
//	"global cap"              some of its tasks wait for a global permit,
//	                          or hold an ancestor's that its tasks wait for
//	"own limit: bulkhead"     tasks wait before its bulkhead, which is full
//	"own limit: concurrency"  tasks wait, and its running tasks hold its concurrency
//	"parent limit: acme"      tasks wait, and the nearest such ancestor is at its limit
//	"global cap"              only blocked callers wait, and the cap is full
//	"own limit"               tasks wait for its limits, which are just being handed on
//	"running long: 12 m"      nothing waits, and its oldest task has run LongRun or more
//	""                        nothing waits and nothing runs long
//
// Here tasks wait means tasks wait or, when none does, callers are
// blocked (Blocked). A blocked caller waits for a slot of a full queue.
// With tasks in it, it waits behind them, for what they wait for. With
// none (a threshold of 0), it waits until its task could start at once.
//
// A task in flight (InFlight) has passed the bulkhead. So a full bulkhead
// holds back only the waiting tasks beyond those in flight and not
// running. One that every waiting task has passed holds none of them:
// they wait for a concurrency limit, and the row names that one. The same
// holds for an ancestor's bulkhead.
//
// A paused row whose own override does not pause it names the nearest
// ancestor whose own does (pausedBy): resuming the row's group would
// start nothing.
//
// A row is "hung" when the group runs at its concurrency limit, its
// oldest task has run LongRun or more, and none of its tasks finished in
// the last LongRun (or in the whole history, when that is shorter). A busy
// group is at its limit too, but its tasks finish. So a hung group that
// has tasks waiting says "own limit: concurrency" and is hung.
//
// An ancestor is at its limit when its row's in-flight count is at its
// bulkhead with tasks waiting before it, or its running cost at its
// concurrency. Under IsolationOff its tasks waiting for a global permit
// wait before its bulkhead, not for it. Its counts cover its
// subtree, so this reads the rows alone. The nearest such ancestor is
// named as rows name groups. Under fair share a task holds its ancestors'
// permits while it waits for a global one. So when no ancestor is at its
// limit but one has tasks waiting for a global permit, those hold the
// ancestor's permits the row's tasks wait for: "global cap".
//
// The counts say how many tasks wait, not what each needs. So "own
// limit" also stands for a wait they cannot place: a task costing more
// than is free, or on a parent's row, a child's own limit or pause. A
// child whose own bulkhead is full says so even while its task waits at
// its parent's. In-flight counts tasks, and a bulkhead permits, so a
// bulkhead that costly tasks fill says "own limit", on its group's row and
// on its children's. Position places a task exactly.

// window is how far back a row's "recent" counts reach.
const window = time.Minute

// recentJSON counts what became of a group's tasks lately. Seconds is how
// far back it reaches, a minute once the history is that long.
type recentJSON struct {
	Seconds   float64 `json:"seconds"`
	Succeeded uint64  `json:"succeeded"`
	Failed    uint64  `json:"failed"`
	Cancelled uint64  `json:"cancelled"`
	Rejected  uint64  `json:"rejected"`
}

// why fills r's why, hung, recent and history from st and the history.
func (h *Handler) why(r *row, st groupconc.GroupStats, find lookup) {
	r.Why = reason(st, h.o.LongRun)
	if r.Why == "own limit" && st.Parent != "" {
		if name, global := h.parentLimit(st, find); name != "" {
			r.Why = "parent limit: " + name
		} else if global {
			r.Why = "global cap"
		}
	}
	if r.Why == "own limit" && st.Waiting == 0 && st.Blocked > 0 && h.globalFull() {
		r.Why = "global cap" // only callers wait, and no limit of theirs is full
	}
	if r.Why == "paused" && st.Parent != "" && !h.pausedOwn(st.GroupKey) {
		r.PausedBy = h.parentPaused(st, find)
	}
	r.History = []int{}
	hs := &h.history
	now := h.now()
	hs.mu.Lock()
	ser := hs.groups[st.GroupKey]
	var base, quiet sample
	var haveBase, haveQuiet bool
	if ser != nil {
		r.History = ser.waiting()
		base, haveBase = ser.before(now - window)
		quiet, haveQuiet = ser.before(now - h.o.LongRun)
	}
	hs.mu.Unlock()
	if haveBase {
		r.Recent = &recentJSON{
			Seconds:   (now - base.at).Round(time.Second).Seconds(),
			Succeeded: delta(st.Succeeded, base.succeeded),
			Failed:    delta(st.Failed, base.failed),
			Cancelled: delta(st.Cancelled, base.cancelled),
			Rejected:  delta(st.Rejected, base.rejected),
		}
	}
	r.Hung = haveQuiet && st.Running > 0 && st.RunningCost >= st.MaxConcurrency &&
		st.OldestRunning >= h.o.LongRun && done(st) == quiet.done()
}

// delta is now - then. A group forgotten and made again starts its
// counters at 0, so then may be the larger. Then it is now.
func delta(now, then uint64) uint64 {
	if now < then {
		return now
	}
	return now - then
}

func done(st groupconc.GroupStats) uint64 { return st.Succeeded + st.Failed + st.Cancelled }

// reason applies the rules above.
func reason(st groupconc.GroupStats, longRun time.Duration) string {
	waiting := waitingOrBlocked(st)
	switch {
	case st.Paused:
		return "paused"
	case st.WaitingGlobal > 0:
		return "global cap"
	case waiting == 0 && st.OldestRunning >= longRun:
		return "running long: " + coarse(st.OldestRunning)
	case waiting == 0:
		return ""
	case bulkheadHolds(st, waiting):
		return "own limit: bulkhead"
	case st.RunningCost >= st.MaxConcurrency:
		return "own limit: concurrency"
	}
	return "own limit"
}

// waitingOrBlocked returns st's waiting tasks, or if none wait, its
// blocked callers.
func waitingOrBlocked(st groupconc.GroupStats) int {
	if st.Waiting > 0 {
		return st.Waiting
	}
	return st.Blocked
}

// bulkheadHolds reports whether st's bulkhead is full and holds back some
// of the waiting (waitingOrBlocked): more of them wait than are in flight
// and not running. Those have passed it.
func bulkheadHolds(st groupconc.GroupStats, waiting int) bool {
	return st.MaxInFlight != groupconc.Unlimited && st.InFlight >= st.MaxInFlight &&
		waiting > st.InFlight-st.Running
}

// globalFull reports whether the global cap's permits are all held.
func (h *Handler) globalFull() bool {
	s := h.e.Stats()
	return s.GlobalMaxInFlight != groupconc.Unlimited && s.GlobalInFlight >= s.GlobalMaxInFlight
}

// coarse writes d in its largest whole unit: "12 s", "12 m", "3 h".
func coarse(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d m", int(d/time.Minute))
	}
	return fmt.Sprintf("%d h", int(d/time.Hour))
}
