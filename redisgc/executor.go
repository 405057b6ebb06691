package redisgc

import (
	"errors"
	"fmt"

	"github.com/kobe/groupconc"
	"github.com/redis/go-redis/v9"
)

// New returns a Coordinator that keeps exec within its part of the fleet
// limits of opts. It coordinates through client with the other replicas that
// use the same Prefix. It takes over exec's policy. From its return, every
// policy exec has is built from opts.Base with the replica's shares. It
// starts with 1 of each coordinated limit until Run has joined the fleet. Do
// not call exec.UpdatePolicy yourself while it coordinates. Do not call
// EvictGroup on a coordinated group either, because tasks of the evicted
// group would run beside the new one's. New returns an error naming what is
// wrong with opts, or a base policy that does not build.
//
// Until Close, or until Run returns, exec refuses an override
// (SetGroupOverride) of a coordinated group's MaxConcurrency. The error
// wraps ErrCoordinated. That limit is the replica's share, which the next
// sync would set again. Overrides of its other limits, and of uncoordinated
// groups, stay in force across syncs. New returns such an error too if exec
// already has an override it would refuse.
func New(client redis.Scripter, exec *groupconc.GroupExecutor, opts Options) (*Coordinator, error) {
	if exec == nil {
		return nil, errors.New("redisgc: nil executor")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := newPolicyMaker(&o)
	if err != nil {
		return nil, err
	}
	remove, err := exec.GuardOverrides(func(g string, ov groupconc.GroupOverride) error { return o.refuseOverride(g, ov) })
	if err != nil {
		return nil, err
	}
	c, err := newCoordinator(client, &execTarget{exec: exec, policies: m}, o)
	if err != nil {
		remove()
		return nil, err
	}
	c.release = remove
	return c, nil
}

// ErrCoordinated is wrapped by the error with which a coordinated
// executor refuses an override of a limit that the fleet shares.
var ErrCoordinated = errors.New("redisgc: limit shared by the fleet")

// refuseOverride refuses an override of a coordinated group's concurrency.
func (o *Options) refuseOverride(g string, ov groupconc.GroupOverride) error {
	if ov.MaxConcurrency == nil {
		return nil
	}
	if l, ok := o.fleetLimit(g); ok {
		return fmt.Errorf("%w: group %q runs at most %d tasks across the replicas, and this replica's limit is its share, which the next sync sets again: change Options.Limits (or DefaultLimit) of every replica instead", ErrCoordinated, g, l)
	}
	return nil
}

// execTarget is a groupconc executor as a Coordinator's target.
type execTarget struct {
	exec     *groupconc.GroupExecutor
	policies *policyMaker
}

// groups counts what runs in permits, as the shares are. A task of cost 3
// holds 3 of its group's limit. So a replica keeps them until it ends. A
// waiting task counts 1, as its cost is not in the stats. A parent's counts
// cover its subtree's tasks.
func (t *execTarget) groups(yield func(string, load) bool) {
	for s := range t.exec.AllGroupStats() {
		if !yield(s.GroupKey, load{running: s.RunningCost, waiting: s.Waiting}) {
			return
		}
	}
}

// total counts as running what the global limit bounds (the tasks in
// flight), and as waiting the rest of what was accepted and not finished.
func (t *execTarget) total() load {
	s := t.exec.Stats()
	return load{running: s.GlobalInFlight, waiting: max(s.Running+s.Waiting-s.GlobalInFlight, 0)}
}

func (t *execTarget) apply(limits map[string]int, global int) error {
	p, err := t.policies.policy(limits, global)
	if err != nil {
		return err
	}
	if err := t.exec.UpdatePolicy(p); err != nil {
		return fmt.Errorf("redisgc: executor: %w", err)
	}
	return nil
}
