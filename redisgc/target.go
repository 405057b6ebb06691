package redisgc

import (
	"fmt"

	"github.com/kobe/groupconc"
)

// load is what a group (or the whole executor) has to do.
type load struct {
	running int // permits held at the limit by running tasks (or, for the global limit, in flight)
	waiting int // accepted tasks that wait, each counted 1
}

// demand is the number of slots a load could use now.
func (l load) demand() int { return l.running + l.waiting }

// target is the executor side of a Coordinator, which it reads demand from
// and applies limits to. Its methods are called from one goroutine.
type target interface {
	// groups calls yield with the load of each group the executor knows.
	groups(yield func(group string, l load) bool)
	// total returns the load of every group together. Its running count is
	// what the global limit bounds.
	total() load
	// apply sets each group of limits to its value, every other
	// coordinated group to 1, and, if global > 0, the global limit.
	apply(limits map[string]int, global int) error
	// closed returns an error once the executor is closed, else nil.
	closed() error
	// remembered returns how many groups the executor remembers. A
	// change of limits resolves each again, so it costs that many.
	remembered() int
}

// policyMaker builds the policies a Coordinator applies from the user's
// base settings.
type policyMaker struct {
	opts *Options
	base *groupconc.GroupPolicy // the base alone, which decides uncoordinated groups
}

// newPolicyMaker checks that the base builds.
func newPolicyMaker(o *Options) (*policyMaker, error) {
	b, err := baseOf(o)
	if err == nil {
		var base *groupconc.GroupPolicy
		if base, err = b.Build(); err == nil {
			return &policyMaker{opts: o, base: base}, nil
		}
	}
	return nil, fmt.Errorf("redisgc: base policy: %w", err)
}

// baseOf returns o.Base's builder, or an error that names its panic.
func baseOf(o *Options) (b *groupconc.PolicyBuilder, err error) {
	defer func() {
		if v := recover(); v != nil {
			b, err = nil, fmt.Errorf("a panic of Options.Base: %v", v)
		}
	}()
	return o.Base(), nil
}

// policy returns the base policy with limits applied. A group in limits runs
// at its value. Any other coordinated group runs at 1, the share every
// replica holds without asking. Every other group runs as the base decides.
func (m *policyMaker) policy(limits map[string]int, global int) (*groupconc.GroupPolicy, error) {
	b, err := baseOf(m.opts)
	if err != nil {
		return nil, fmt.Errorf("redisgc: policy: %w", err)
	}
	b = b.PerGroupMaxConcurrency(limits).
		ConcurrencyResolver(func(g string) int {
			if _, ok := m.opts.fleetLimit(g); ok {
				return 1
			}
			return m.base.ResolveConcurrency(g)
		})
	if global > 0 {
		b = b.GlobalMaxInFlight(global)
	}
	p, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("redisgc: policy: %w", err)
	}
	return p, nil
}
