package grouplabel

import (
	"iter"
	"slices"
	"time"

	"github.com/kobe/groupconc"
)

// Sums adds up the stats of the groups of one label value.
type Sums struct {
	Running, Waiting, Groups, Blocked int
	Limit                             int // the concurrency limits, Unlimited ones left out
	OldestWait, OldestRunning         time.Duration
	Paused, WaitingGlobal             int
	Ended                             [4]uint64 // Succeeded, Failed, Cancelled, Rejected
}

// Add counts g in s.
func (s *Sums) Add(g groupconc.GroupStats) {
	s.Running += g.Running
	s.Waiting += g.Waiting
	s.Groups++
	s.Blocked += g.Blocked
	if g.MaxConcurrency != groupconc.Unlimited {
		s.Limit += g.MaxConcurrency
	}
	s.OldestWait = max(s.OldestWait, g.OldestWait)
	s.OldestRunning = max(s.OldestRunning, g.OldestRunning)
	if g.Paused {
		s.Paused++
	}
	s.WaitingGlobal += g.WaitingGlobal
	for i, n := range [...]uint64{g.Succeeded, g.Failed, g.Cancelled, g.Rejected} {
		s.Ended[i] += n
	}
}

// Own returns the stats gs yields with each parent's counts made its own.
// A parent's GroupStats covers its subtree, so its children's counts are
// taken from it. A task then counts once, in its own group, whatever
// values the groups are labelled with. A child's counts are taken from its
// nearest ancestor in gs, since a snapshot of the active groups may
// leave out an idle group between a paused child and an active
// grandparent. parentOf returns the parent of such a group, "" if it has
// none or is gone. Those forgotten or evicted leave their counts with the
// parent, whose GroupStats keep them. Ages and limits stay as they are.
func Own(gs iter.Seq[groupconc.GroupStats], parentOf func(key string) string) []groupconc.GroupStats {
	all := slices.Collect(gs)
	if !slices.ContainsFunc(all, func(g groupconc.GroupStats) bool { return g.Parent != "" }) {
		return all
	}
	at := make(map[string]int, len(all))
	for i, g := range all {
		at[g.GroupKey] = i
	}
	up := map[string]string{} // parentOf's answers: it may walk a subtree
	sub := slices.Clone(all)  // the subtrees' counts, as reported
	for _, c := range sub {
		i, ok := at[c.Parent]
		// A parent is remembered while a child is, so the climb ends at a
		// group in gs or at the top. The bound is for a parent forgotten
		// and made again meanwhile.
		for k, n := c.Parent, 0; !ok && k != "" && n < 16; n++ {
			p, seen := up[k]
			if !seen {
				p = parentOf(k)
				up[k] = p
			}
			k = p
			i, ok = at[k]
		}
		if !ok {
			continue
		}
		p := &all[i]
		p.Running = max(p.Running-c.Running, 0)
		p.Waiting = max(p.Waiting-c.Waiting, 0)
		p.Blocked = max(p.Blocked-c.Blocked, 0)
		p.WaitingGlobal = max(p.WaitingGlobal-c.WaitingGlobal, 0)
		p.Succeeded -= min(p.Succeeded, c.Succeeded)
		p.Failed -= min(p.Failed, c.Failed)
		p.Cancelled -= min(p.Cancelled, c.Cancelled)
		p.Rejected -= min(p.Rejected, c.Rejected)
	}
	return all
}

// ParentOf returns a parentOf for Own that asks e. It reads the parent
// the group was made with from ExplainGroup, which costs the group's depth
// (and waits for an UpdatePolicy or SetGroupOverride under way).
// GroupStats would do, but a parent's costs its subtree, up to every
// active group, and a scrape may climb through one idle parent per paused
// child.
func ParentOf(e *groupconc.GroupExecutor) func(string) string {
	return func(key string) string {
		x, _ := e.ExplainGroup(key)
		if len(x.Ancestors) == 0 {
			return ""
		}
		return x.Ancestors[0]
	}
}
