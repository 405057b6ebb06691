package httpgc

import (
	"slices"

	"github.com/kobe/groupconc"
)

// A list of groups carries a shown child's ancestors too. The page draws a
// child under its parent, so a child without its parent's row would be
// orphaned. The first groups of the order are taken with the ancestors
// they lack, as long as the list stays within its limit. A group whose
// ancestors do not fit is left out, and a later one takes its place (top
// keeps more groups than the list holds, and all of them when those are
// not enough).
// An ancestor counts in the list's limit but not in its total, so a prefix
// filter's count stays that of the groups it matches. The list is then
// sorted again. A parent's counts and ages cover its subtree, so by
// oldest wait it comes before its children.
//
// Flat keys (no parents) cost nothing more. With parents, an ancestor not
// among the first groups costs one GroupStats call. Ancestors are at most
// maxDepth deep, as the executor allows.

// maxDepth bounds the ancestors followed from a group.
const maxDepth = 8

// lookup returns a group's stats by key.
type lookup func(key string) (groupconc.GroupStats, bool)

// withAncestors returns items, sorted by t, with the ancestors each lacks,
// at most t.n in all.
func (h *Handler) withAncestors(t *top, items []item) []item {
	if !slices.ContainsFunc(items, func(it item) bool { return it.st.Parent != "" }) {
		return items
	}
	at := make(map[string]int, len(items)) // where a key is in items
	for i := range items {
		at[items[i].st.GroupKey] = i
	}
	kept := make(map[string]bool, len(items))
	out := make([]item, 0, len(items))
	var chain []item
	for i := range items {
		if kept[items[i].st.GroupKey] {
			continue // taken already, as an ancestor
		}
		chain = append(chain[:0], items[i])
		for key := items[i].st.Parent; key != "" && !kept[key] && len(chain) <= maxDepth; {
			var anc item
			if j, ok := at[key]; ok {
				anc = items[j]
			} else if st, ok := h.e.GroupStats(key); ok {
				anc = item{st: st}
			} else {
				break // forgotten since: the child shows at the top
			}
			chain = append(chain, anc)
			key = anc.st.Parent
		}
		if len(out)+len(chain) > t.n {
			continue
		}
		for _, it := range chain {
			kept[it.st.GroupKey] = true
			out = append(out, it)
		}
	}
	t.sort(out)
	return out
}

// ancestorsIn returns a lookup that finds a group among rows' items, or
// else asks the executor.
func (h *Handler) ancestorsIn(items []item) lookup {
	if !slices.ContainsFunc(items, func(it item) bool { return it.st.Parent != "" }) {
		return h.e.GroupStats
	}
	m := make(map[string]groupconc.GroupStats, len(items))
	for _, it := range items {
		m[it.st.GroupKey] = it.st
	}
	return func(key string) (groupconc.GroupStats, bool) {
		if st, ok := m[key]; ok {
			return st, true
		}
		return h.e.GroupStats(key)
	}
}

// parentLimit returns the reason of st's row, given own, the reason its
// own row gives. It reads its ancestors' rows, nearest first. A task
// takes every bulkhead before any concurrency limit. An ancestor's
// bulkhead holds st's first task in flight if no waiting task is past
// it. If one is, the counts do not say whose: "own limit". A caller
// blocked on a queue of no slots waits until its task could start. So
// the first full bulkhead with tasks waiting before it holds it. Then the
// nearest ancestor at its concurrency is named. Under fair share, with
// none, an ancestor's tasks waiting for a global permit hold its permits:
// "global cap". Under IsolationOff a task takes its global permit first.
// So those hold none, and wait before its bulkhead.
func (h *Handler) parentLimit(st groupconc.GroupStats, own string, find lookup) string {
	fair := h.e.Policy().Isolation() == groupconc.IsolationFairShare
	child, key := st, st.Parent
	conc, global := "", false
	for range maxDepth {
		if key == "" {
			break
		}
		p, ok := find(key)
		if !ok {
			break
		}
		switch {
		case p.MaxInFlight == groupconc.Unlimited:
		case st.Waiting == 0:
			if bulkheadFull(p) && before(p, fair) > 0 {
				return "parent limit: " + h.display(key)
			}
		case inFlightWaiting(p) == 0:
			return "parent limit: " + h.display(key)
		case before(p, fair) > before(child, fair): // tasks in flight below it wait before it
			return "own limit"
		}
		if conc == "" && p.RunningCost >= p.MaxConcurrency {
			conc = h.display(key)
		}
		global = global || fair && p.WaitingGlobal > 0 && conc == ""
		child, key = p, p.Parent
	}
	switch {
	case own != "own limit":
		return own
	case conc != "":
		return "parent limit: " + conc
	case global:
		return "global cap"
	}
	return own
}

// pausedOwn reports whether key's own override pauses it.
func (h *Handler) pausedOwn(key string) bool {
	o, ok := h.e.GroupOverride(key)
	return ok && o.Paused != nil && *o.Paused
}

// parentPaused names the nearest ancestor of st's group that its own
// override pauses, or returns "" if none does (it was just resumed). A
// group under a paused ancestor is paused too, but resuming it does not
// let its tasks start. The row says whom to resume.
func (h *Handler) parentPaused(st groupconc.GroupStats, find lookup) string {
	key := st.Parent
	for range maxDepth {
		if key == "" {
			return ""
		}
		if h.pausedOwn(key) {
			return h.display(key)
		}
		p, ok := find(key)
		if !ok {
			return ""
		}
		key = p.Parent
	}
	return ""
}
