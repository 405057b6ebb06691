package redisgc

import (
	"errors"
	"fmt"

	"github.com/kobe/groupconc"
	"github.com/redis/go-redis/v9"
)

// New returns a Coordinator that keeps exec within its part of the fleet
// limits of opts, coordinating through client with the other replicas
// that use the same Prefix. It takes over exec's policy: from its return,
// every policy exec has is built from opts.Base with the replica's shares,
// starting with 1 of each coordinated limit until Run has joined the
// fleet. Do not call exec.UpdatePolicy yourself while it coordinates, nor
// EvictGroup on a coordinated group (tasks of the evicted group would run
// beside the new one's). It returns an error naming what is wrong with
// opts, or a base policy that does not build.
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
	return newCoordinator(client, &execTarget{exec: exec, policies: m}, o)
}

// execTarget is a groupconc executor as a Coordinator's target.
type execTarget struct {
	exec     *groupconc.GroupExecutor
	policies *policyMaker
}

func (t *execTarget) groups(yield func(string, load) bool) {
	for s := range t.exec.AllGroupStats() {
		if !yield(s.GroupKey, load{running: s.Running, waiting: s.Waiting}) {
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
