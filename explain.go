package groupconc

import "github.com/kobe/groupconc/internal/groupstate"

// LimitSource names the setting that gives a group one of its limits.
type LimitSource string

// The settings a limit may come from, from the least specific up. A limit
// is decided by the first of override, group, resolver, default and
// builtin that gives it a value.
const (
	SourceBuiltin  LimitSource = "builtin"  // nothing set: the library's default
	SourceDefault  LimitSource = "default"  // a Default…PerGroup setting
	SourceResolver LimitSource = "resolver" // a resolver's answer
	SourceGroup    LimitSource = "group"    // a PerGroup… map entry
	SourceOverride LimitSource = "override" // an executor override (SetGroupOverride)
)

// LimitChoice is the value one setting gives a limit.
type LimitChoice struct {
	Source LimitSource
	Value  int // Unlimited for no limit
}

// LimitExplanation says where one limit of a group comes from.
type LimitExplanation struct {
	Value  int         // the limit that setting gives (the one in force)
	Source LimitSource // the setting that decided it
	// Stack is every setting that gives a value for this key. The deciding
	// one comes first, then the ones it shadows, in the order override,
	// group, resolver, default, builtin. It always ends with builtin, the
	// value left if every other setting went away. A resolver is in it only
	// for a key the policy asks it about, one its PerGroup map does not
	// list. It is there only when it answered, since a panic gives no value.
	Stack []LimitChoice
}

// GroupExplanation says, for each limit of a group, which setting decided
// it and what each setting would give.
type GroupExplanation struct {
	GroupKey                                            string
	MaxConcurrency, MaxInFlight, QueueThreshold, Weight LimitExplanation
	// Ancestors are the group's parent, its parent, and so on, nearest
	// first. It is nil at the top.
	Ancestors []string
}

// Explain returns, for groupKey, which setting of p decides each of its
// limits and the value each setting gives. The values in force are those the
// Resolve methods return. It asks the resolvers, as ResolveConcurrency and
// ResolveWeight do. A policy's explanation has no override (see
// GroupExecutor.ExplainGroup).
//
// A MaxInFlight or QueueThreshold has no resolver. A Weight outside
// IsolationFairShare is always the builtin 1.
//
// Ancestors are those ResolveParent gives, step by step. Explain never
// fails, so a chain that Submit refuses is cut where its fault lies. It
// stops before a key met twice, at 8 ancestors, or at the key whose parent
// the resolver panicked on. A panicking limit resolver is passed over
// likewise.
func (p *GroupPolicy) Explain(groupKey string) GroupExplanation {
	p = p.orDefault()
	ancestors, _ := p.parentChain(groupKey, nil)
	return p.explain(groupKey, p.limits(groupKey).Answers, GroupOverride{}, ancestors)
}

// ExplainGroup returns Explain's answer for groupKey's group with the
// executor's override (SetGroupOverride) on top. It returns false for a
// group the executor does not know, as GroupStats does. Its values are the
// limits in force, those GroupStats reports, but for a limit an adaptive
// limit moves (AdaptiveConcurrency, and the queue threshold it scales):
// there Value is the setting's, the ceiling the limit moves under, and
// GroupStats has the value in force. It does not ask the resolvers
// again. A resolver's value is the answer it gave when the group's limits
// were last resolved (first use, UpdatePolicy, SetGroupOverride). It waits
// for an UpdatePolicy or SetGroupOverride in progress.
func (e *GroupExecutor) ExplainGroup(groupKey string) (GroupExplanation, bool) {
	if !e.made() {
		return GroupExplanation{}, false
	}
	e.groups.ForgetIdle() // as GroupStats does: a group idle for 2×TTL is gone
	e.updating.Lock()
	defer e.updating.Unlock()
	g, ok := e.groups.Lookup(groupKey)
	if !ok {
		return GroupExplanation{}, false
	}
	// Under updating, g's limits were resolved from the policy and override
	// read here. UpdatePolicy and SetGroupOverride resolve again before they
	// unlock, and a group created since read them too.
	o, _ := e.overrides.get(e.groups, groupKey)
	var ancestors []string // those g was made with, kept for its life
	for a := g.Parent(); a != nil; a = a.Parent() {
		ancestors = append(ancestors, a.Key())
	}
	return e.policy.Load().explain(groupKey, g.Limits().Answers, o, ancestors), true
}

// explain builds the explanation of groupKey's limits under p, given the
// resolvers' answers, the override and the group's ancestors.
func (p *GroupPolicy) explain(groupKey string, a groupstate.Answers, o GroupOverride, ancestors []string) GroupExplanation {
	return GroupExplanation{
		GroupKey:       groupKey,
		Ancestors:      ancestors,
		MaxConcurrency: explainLimit(o.MaxConcurrency, p.concurrency, groupKey, a.Concurrency, p.defaultConc, p.set&setConc != 0, defaultPolicy.defaultConc),
		MaxInFlight:    explainLimit(o.MaxInFlight, p.inFlight, groupKey, 0, p.defaultInFlight, p.set&setInFlight != 0, defaultPolicy.defaultInFlight),
		QueueThreshold: explainLimit(o.QueueThreshold, p.queue, groupKey, 0, p.defaultQueue, p.set&setQueue != 0, defaultPolicy.defaultQueue),
		Weight:         explainLimit(o.Weight, p.weights, groupKey, a.Weight, p.defaultWeight, p.set&setWeight != 0, defaultPolicy.defaultWeight),
	}
}

// explainLimit stacks the settings of one limit, most specific first. They
// are the override, the map's entry, the resolver's answer (0 for none), the
// default if set, and the builtin value.
func explainLimit(override *int, m map[string]int, groupKey string, answer, def int, defSet bool, builtin int) LimitExplanation {
	stack := make([]LimitChoice, 0, 5)
	if override != nil {
		stack = append(stack, LimitChoice{SourceOverride, *override})
	}
	if n, ok := m[groupKey]; ok {
		stack = append(stack, LimitChoice{SourceGroup, n})
	}
	if answer > 0 {
		stack = append(stack, LimitChoice{SourceResolver, answer})
	}
	if defSet {
		stack = append(stack, LimitChoice{SourceDefault, def})
	}
	stack = append(stack, LimitChoice{SourceBuiltin, builtin})
	return LimitExplanation{Value: stack[0].Value, Source: stack[0].Source, Stack: stack}
}
