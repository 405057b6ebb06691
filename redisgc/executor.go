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
	if errors.Is(err, groupconc.ErrClosed) {
		return nil, fmt.Errorf("redisgc: executor: %w", err)
	}
	if err != nil {
		return nil, err // an override in force it refuses (ErrCoordinated's)
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
		return fmt.Errorf("%w: group %s runs at most %d tasks across the replicas, and this replica's limit is its share, which the next sync sets again: change Options.Limits (or DefaultLimit) of every replica instead", ErrCoordinated, quote(g), l)
	}
	return nil
}

// execTarget is a groupconc executor as a Coordinator's target.
type execTarget struct {
	exec     *groupconc.GroupExecutor
	policies *policyMaker
	// pausedWaiting is what the last groups call found waiting in paused
	// groups, and waitingGlobal what it found waiting for a global permit.
	pausedWaiting, waitingGlobal int
}

// groups counts what runs in permits, as the shares are. A task of cost 3
// holds 3 of its group's limit. So a replica keeps them until it ends. A
// waiting task counts 1, as its cost is not in the stats. A parent's counts
// cover its subtree's tasks. The waiting tasks of a paused group cannot
// start, so they ask for no share: a pause on one replica does not hold the
// group back on the others. They leave its ancestors' demand too.
//
// It reads the active groups alone: one with nothing running, waiting or
// paused has no load. So a tick costs what is active, not every group the
// executor remembers, which may be millions of idle ones.
func (t *execTarget) groups(yield func(string, load) bool) {
	stats := make(map[string]groupconc.GroupStats)
	for s := range t.exec.ActiveGroupStats() {
		stats[s.GroupKey] = s
	}
	// held counts, per group not paused, the waiting tasks of its paused
	// descendants. A group under a paused ancestor is paused too, so only
	// the top of each paused subtree is counted.
	held := make(map[string]int)
	t.pausedWaiting, t.waitingGlobal = 0, 0
	for _, s := range stats {
		if s.Parent == "" { // a parent's counts cover its subtree's
			t.waitingGlobal += s.WaitingGlobal
		}
		if !s.Paused || s.Waiting == 0 || stats[s.Parent].Paused {
			continue
		}
		t.pausedWaiting += s.Waiting
		// A snapshot may miss a parent made meanwhile. A chain is short.
		for k, n := s.Parent, 0; k != "" && n <= maxAncestors; k, n = stats[k].Parent, n+1 {
			held[k] += s.Waiting
		}
	}
	for k, s := range stats {
		l := load{running: s.RunningCost, waiting: max(s.Waiting-held[k], 0)}
		if s.Paused {
			l.waiting = 0
		}
		if !yield(k, l) {
			return
		}
	}
}

// maxAncestors bounds the walk up a group's parents. groupconc refuses
// more than 8.
const maxAncestors = 8

// total counts as running what the global limit bounds (the permits in
// flight), and as waiting the tasks that wait and hold no global permit,
// each 1. Under fair share that is every waiting task. Under IsolationOff
// a task takes its global permit first, so those waiting for one alone.
// A paused group's waiting tasks hold no global permit and cannot start, so
// they are left out: total is read after groups, which counts them.
func (t *execTarget) total() load {
	s := t.exec.Stats()
	waiting := s.Waiting - t.pausedWaiting
	if t.exec.Policy().Isolation() == groupconc.IsolationOff {
		// Read before s: a task that took its global permit since is in
		// GlobalInFlight too. It is still no more than those waiting.
		waiting = min(t.waitingGlobal, waiting)
	}
	return load{running: s.GlobalInFlight, waiting: max(waiting, 0)}
}

func (t *execTarget) remembered() int { return t.exec.Stats().Groups }

// closed returns the executor's error once it is shut down or closed. A
// replica finds that as it applies limits, but an idle one applies none.
// So it asks with a guard that refuses nothing, added and removed at once.
func (t *execTarget) closed() error {
	remove, err := t.exec.GuardOverrides(func(string, groupconc.GroupOverride) error { return nil })
	if err != nil {
		return fmt.Errorf("redisgc: executor: %w", err)
	}
	remove()
	return nil
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
