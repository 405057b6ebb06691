package groupconc_test

import (
	"strings"
	"testing"

	"github.com/kobe/groupconc"
)

// modelKeys are the groups of the fair-share model tests, where the limit
// binds at the global cap ("global") or at the top group t ("tenant").
var modelKeys = map[string][]string{
	"global": {"a", "a/x", "a/y", "a/x/p", "b", "b/z", "c"},
	"tenant": {"t", "t/x", "t/y", "t/x/p", "t/x/q"},
}

// modelWeights are their weights, where a test gives weights.
var modelWeights = map[string]int{"a/x": 3, "b": 2, "t/y": 3, "t/x/q": 2, "a": 2}

// modelWeight returns k's weight, with weights or without.
func modelWeight(useWeights bool) func(k string) int {
	return func(k string) int {
		if useWeights && modelWeights[k] > 0 {
			return modelWeights[k]
		}
		return 1
	}
}

// modelPolicy returns the policy of a fair-share model test: the limit at
// where, with weights or without.
func modelPolicy(t *testing.T, where string, useWeights bool, limit int) *groupconc.GroupPolicy {
	b := groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
		ParentSeparator("/").DefaultMaxConcurrencyPerGroup(groupconc.Unlimited)
	if useWeights {
		b = b.PerGroupWeight(modelWeights)
	}
	if where == "global" {
		b = b.GlobalMaxInFlight(limit)
	} else {
		b = b.PerGroupMaxConcurrency(map[string]int{"t": limit})
	}
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// shareModel is the fair choice with parents (ParentSeparator "/") that
// the fair-share model tests share. At each level the sharer with work
// that holds the fewest per weight goes first, ties to the oldest waiting
// task. A group's own tasks are a sharer of its level.
type shareModel struct {
	keys   []string
	weight func(key string) int
	held   func(g string, own bool) int // what the sharer's running tasks hold
	oldest func(g string, own bool) int // the id of its oldest waiting task, -1 if none
}

// sharer is a group's subtree, or its own tasks (own).
type sharer struct {
	g   string
	own bool
}

// choose returns the sharer of ss that holds the fewest per weight, of
// those tied the oldest waiter's.
func (m shareModel) choose(ss []sharer) sharer {
	best := ss[0]
	for _, s := range ss[1:] {
		h1, w1 := m.held(s.g, s.own), m.weight(s.g)
		h2, w2 := m.held(best.g, best.own), m.weight(best.g)
		if h1*w2 < h2*w1 || h1*w2 == h2*w1 && m.oldest(s.g, s.own) < m.oldest(best.g, best.own) {
			best = s
		}
	}
	return best
}

// sharersOf returns the sharers with work under g: the top-level groups
// for g "", else g's own tasks and its children.
func (m shareModel) sharersOf(g string) []sharer {
	var ss []sharer
	if g != "" && m.oldest(g, true) >= 0 {
		ss = append(ss, sharer{g, true})
	}
	for _, k := range m.keys {
		if modelParent(k) == g && m.oldest(k, false) >= 0 {
			ss = append(ss, sharer{k, false})
		}
	}
	return ss
}

// next returns the sharer to serve at a limit of group top, or of the
// global cap (top ""), which chooses level by level down to a group's own
// tasks. It reports false when nothing waits there.
func (m shareModel) next(top string) (sharer, bool) {
	ss := m.sharersOf(top)
	if len(ss) == 0 {
		return sharer{}, false
	}
	s := m.choose(ss)
	for top == "" && !s.own {
		s = m.choose(m.sharersOf(s.g))
	}
	return s, true
}

// modelParent returns k's parent under ParentSeparator("/").
func modelParent(k string) string {
	i := strings.LastIndex(k, "/")
	if i <= 0 {
		return ""
	}
	return k[:i]
}

// modelUnder reports whether k is g or in g's subtree.
func modelUnder(k, g string) bool { return k == g || strings.HasPrefix(k, g+"/") }

// modelTask is what the fair choice reads of a task of either model.
type modelTask struct {
	id    int
	key   string
	prio  groupconc.Priority
	state int // 0 waiting, 1 running, 2 ended
}

func (tk *modelTask) task() *modelTask { return tk }

// in reports whether tk is one of the sharer's tasks: g's own, or with own
// false, those of g's subtree.
func (tk *modelTask) in(g string, own bool) bool {
	return tk.key == g || !own && modelUnder(tk.key, g)
}

// modelPredict returns the model's next start under top ("" for the
// global layer): the fair choice among the sharers of the tasks all
// returns, each running task counting what holds says, then the chosen
// sharer's first waiting task of the highest priority. It returns nil if
// none waits.
func modelPredict[T interface{ task() *modelTask }](all func() []T, where string, useWeights bool, holds func(T) int) func() T {
	m := shareModel{keys: modelKeys[where], weight: modelWeight(useWeights)}
	m.held = func(g string, own bool) int {
		n := 0
		for _, tk := range all() {
			if c := tk.task(); c.state == 1 && c.in(g, own) {
				n += holds(tk)
			}
		}
		return n
	}
	m.oldest = func(g string, own bool) int {
		for _, tk := range all() {
			if c := tk.task(); c.state == 0 && c.in(g, own) {
				return c.id
			}
		}
		return -1
	}
	top := "t"
	if where == "global" {
		top = ""
	}
	return func() T {
		var best T
		s, ok := m.next(top)
		if !ok {
			return best
		}
		found := false
		for _, tk := range all() {
			if c := tk.task(); c.state == 0 && c.in(s.g, s.own) && (!found || c.prio < best.task().prio) {
				best, found = tk, true
			}
		}
		return best
	}
}
