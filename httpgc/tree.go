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

// parentLimit returns the displayed name of st's nearest ancestor whose
// own limits hold its subtree: its bulkhead full with tasks waiting before
// it (bulkheadHolds), or its running tasks' cost at its concurrency. It
// returns "" if none does, and then, under fair share, whether an
// ancestor has tasks waiting for a global permit: they hold its permits as
// they wait. Under IsolationOff a task takes its global permit first, so
// such tasks hold none of them, and wait before its bulkhead.
func (h *Handler) parentLimit(st groupconc.GroupStats, find lookup) (name string, global bool) {
	fair := h.e.Policy().Isolation() == groupconc.IsolationFairShare
	key := st.Parent
	for range maxDepth {
		if key == "" {
			break
		}
		p, ok := find(key)
		if !ok {
			break
		}
		waiting := waitingOrBlocked(p)
		if !fair {
			waiting -= p.WaitingGlobal // they wait for the global cap before its bulkhead
		}
		if bulkheadHolds(p, waiting) || p.RunningCost >= p.MaxConcurrency {
			return h.display(key), false
		}
		global = global || fair && p.WaitingGlobal > 0
		key = p.Parent
	}
	return "", global
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
