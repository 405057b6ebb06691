package httpgc

import (
	"fmt"
	"time"

	"github.com/kobe/groupconc"
)

// Why a group's tasks wait, as a row's "why" says it. It names the limit
// its first task waits at, when the counts can tell. That is the task its
// lines serve first. The first rule that holds decides.
//
//	"paused"                  the group, or an ancestor, is paused
//	"global cap"              its first task waits for a global permit,
//	                          or tasks that do hold an ancestor's
//	"own limit: bulkhead"     tasks wait before its bulkhead, which is full,
//	                          and none is past it
//	"own limit"               so, but the bulkhead is not full: costly tasks fill it
//	"parent limit: acme"      its first task waits at the nearest such bulkhead
//	"own limit"               it may wait at one, or past it
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
// A task takes every bulkhead, its own first, before any concurrency
// limit. Under IsolationOff it takes its global permit first, under fair
// share last. Each line serves in order, so the first task passes each
// limit before the others. A task in flight (InFlight) has passed the
// bulkhead. So one waiting task in flight and not running means the first
// one is past it. Then the row names a later limit, even though others
// wait before the bulkhead. An ancestor's bulkhead holds the first task
// when no waiting task of its subtree is past it. Some may be, while
// tasks in flight below it wait before it. Then the counts cannot say
// whose: "own limit". Under IsolationOff the tasks waiting for a global
// permit wait before every bulkhead.
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
// An ancestor is at its concurrency when its running cost is. Its counts
// cover its subtree, so this reads the rows alone. The nearest such
// ancestor is named as rows name groups. Under fair share a task holds
// its ancestors' permits while it waits for a global one. So when no
// ancestor is at its limit but one has tasks waiting for a global permit,
// those hold the ancestor's permits the row's tasks wait for: "global
// cap".
//
// The counts say how many tasks wait, not what each needs. So "own
// limit" also stands for a wait they cannot place. One is a bulkhead
// costly tasks fill: in-flight counts tasks, and a bulkhead permits.
// Another, on a parent's row, is a child's own limit or pause. A costly
// task may wait at its own concurrency limit, with too few permits free.
// Its counts are those of a task waiting at its parent's. So its row
// names the parent's when that is full. Position places a task exactly.

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
	fair := h.e.Policy().Isolation() == groupconc.IsolationFairShare
	r.Why = reason(st, h.o.LongRun, fair)
	if st.Parent != "" && mayBeAncestors(st, r.Why) {
		r.Why = h.parentLimit(st, r.Why, find)
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

// reason applies the rules above that read st alone. Under fair share
// (fair) the global cap comes last in the walk, under IsolationOff first.
func reason(st groupconc.GroupStats, longRun time.Duration, fair bool) string {
	waiting := waitingOrBlocked(st)
	first := before(st, fair) > 0 && inFlightWaiting(st) == 0 // the first waits before the bulkhead
	switch {
	case st.Paused:
		return "paused"
	case st.WaitingGlobal > 0 && (fair || st.WaitingGlobal == st.Waiting):
		return "global cap"
	case waiting == 0 && st.OldestRunning >= longRun:
		return "running long: " + coarse(st.OldestRunning)
	case waiting == 0:
		return ""
	case first && bulkheadFull(st):
		return "own limit: bulkhead"
	case first && st.Waiting > 0 && st.MaxInFlight != groupconc.Unlimited:
		return "own limit" // costly tasks fill it: in-flight counts tasks
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

// mayBeAncestors reports whether why, read from st alone, may stand for
// an ancestor's limit. Its first task is past its bulkhead, or only
// callers wait and its limits have room.
func mayBeAncestors(st groupconc.GroupStats, why string) bool {
	switch {
	case why != "own limit" && why != "own limit: concurrency":
		return false
	case st.Waiting > 0:
		return inFlightWaiting(st) > 0
	}
	return why == "own limit"
}

// inFlightWaiting returns how many of st's waiting tasks are in flight:
// past its bulkhead, and not running.
func inFlightWaiting(st groupconc.GroupStats) int { return max(st.InFlight-st.Running, 0) }

// before returns how many of st's waiting tasks (waitingOrBlocked) wait
// before its bulkhead. Under IsolationOff those waiting for a global
// permit wait before it too, but for the global cap.
func before(st groupconc.GroupStats, fair bool) int {
	n := waitingOrBlocked(st) - inFlightWaiting(st)
	if !fair {
		n -= st.WaitingGlobal
	}
	return max(n, 0)
}

// bulkheadFull reports whether st's in-flight count is at its bulkhead.
func bulkheadFull(st groupconc.GroupStats) bool {
	return st.MaxInFlight != groupconc.Unlimited && st.InFlight >= st.MaxInFlight
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
