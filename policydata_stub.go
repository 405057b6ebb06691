package groupconc

// Temporary stand-in for the policy-as-data API; replaced by the real one.

import (
	"errors"
	"fmt"
	"maps"
	"sync"
)

type LimitSource string

const (
	SourceBuiltin  LimitSource = "builtin"
	SourceDefault  LimitSource = "default"
	SourceResolver LimitSource = "resolver"
	SourceGroup    LimitSource = "group"
	SourceOverride LimitSource = "override"
)

type LimitChoice struct {
	Source LimitSource
	Value  int
}

type LimitExplanation struct {
	Value  int
	Source LimitSource
	Stack  []LimitChoice
}

type GroupExplanation struct {
	GroupKey                                           string
	MaxConcurrency, MaxInFlight, QueueThreshold, Weight LimitExplanation
}

type GroupOverride struct {
	MaxConcurrency, MaxInFlight, QueueThreshold, Weight *int
}

var ErrUnknownGroup = errors.New("groupconc: unknown group")

type stubState struct {
	mu   sync.Mutex
	base *GroupPolicy
	over map[string]GroupOverride
}

var stubStates sync.Map

func (e *GroupExecutor) stub() *stubState {
	s, _ := stubStates.LoadOrStore(e, &stubState{over: map[string]GroupOverride{}})
	return s.(*stubState)
}

func (p *GroupPolicy) Explain(groupKey string) GroupExplanation {
	return explainStub(p.orDefault(), groupKey, GroupOverride{})
}

func explainStub(p *GroupPolicy, key string, o GroupOverride) GroupExplanation {
	one := func(ov *int, m map[string]int, res func(string) int, def, builtin int) LimitExplanation {
		var st []LimitChoice
		if ov != nil {
			st = append(st, LimitChoice{SourceOverride, *ov})
		}
		if v, ok := m[key]; ok {
			st = append(st, LimitChoice{SourceGroup, v})
		}
		if res != nil {
			if v, ok := callResolver(res, key); ok {
				st = append(st, LimitChoice{SourceResolver, max(v, 1)})
			}
		}
		if def != builtin {
			st = append(st, LimitChoice{SourceDefault, def})
		}
		st = append(st, LimitChoice{SourceBuiltin, builtin})
		return LimitExplanation{Value: st[0].Value, Source: st[0].Source, Stack: st}
	}
	return GroupExplanation{
		GroupKey:       key,
		MaxConcurrency: one(o.MaxConcurrency, p.concurrency, p.resolver, p.defaultConc, 1),
		MaxInFlight:    one(o.MaxInFlight, p.inFlight, nil, p.defaultInFlight, Unlimited),
		QueueThreshold: one(o.QueueThreshold, p.queue, nil, p.defaultQueue, Unlimited),
		Weight:         one(o.Weight, p.weights, p.weightResolver, p.defaultWeight, 1),
	}
}

func (e *GroupExecutor) ExplainGroup(groupKey string) (GroupExplanation, bool) {
	if _, ok := e.GroupStats(groupKey); !ok {
		return GroupExplanation{}, false
	}
	s := e.stub()
	s.mu.Lock()
	defer s.mu.Unlock()
	base := s.base
	if base == nil {
		base = e.Policy()
	}
	return explainStub(base.orDefault(), groupKey, s.over[groupKey]), true
}

func (e *GroupExecutor) GroupOverride(groupKey string) (GroupOverride, bool) {
	s := e.stub()
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.over[groupKey]
	return o, ok
}

func (e *GroupExecutor) SetGroupOverride(groupKey string, o GroupOverride) error {
	if _, ok := e.GroupStats(groupKey); !ok {
		return fmt.Errorf("%w: %q", ErrUnknownGroup, groupKey)
	}
	for _, f := range []struct {
		name  string
		v     *int
		least int
	}{{"MaxConcurrency", o.MaxConcurrency, 1}, {"MaxInFlight", o.MaxInFlight, 1}, {"QueueThreshold", o.QueueThreshold, 0}, {"Weight", o.Weight, 1}} {
		if f.v != nil && *f.v < f.least {
			return fmt.Errorf("%w: %s is %d, want >= %d", ErrInvalidPolicy, f.name, *f.v, f.least)
		}
	}
	s := e.stub()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.base == nil {
		s.base = e.Policy().orDefault()
	}
	if o == (GroupOverride{}) {
		delete(s.over, groupKey)
	} else {
		s.over[groupKey] = o
	}
	p := *s.base
	p.concurrency, p.inFlight, p.queue, p.weights = maps.Clone(p.concurrency), maps.Clone(p.inFlight), maps.Clone(p.queue), maps.Clone(p.weights)
	set := func(m *map[string]int, k string, v *int) {
		if v == nil {
			return
		}
		if *m == nil {
			*m = map[string]int{}
		}
		(*m)[k] = *v
	}
	for k, o := range s.over {
		set(&p.concurrency, k, o.MaxConcurrency)
		set(&p.inFlight, k, o.MaxInFlight)
		set(&p.queue, k, o.QueueThreshold)
		set(&p.weights, k, o.Weight)
	}
	return e.UpdatePolicy(&p)
}
