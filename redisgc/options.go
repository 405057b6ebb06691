package redisgc

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/kobe/groupconc"
)

// Options configures a Coordinator. Every replica of a fleet must use the
// same Limits, DefaultLimit, GlobalLimit, Prefix and LeaseTTL. The zero
// value is valid and coordinates no group. New copies what it keeps.
type Options struct {
	// Limits are the fleet-wide concurrency limits of the groups they name.
	// Across all replicas, the running tasks of g hold at most Limits[g]
	// permits at once, one each or their cost (SubmitOptions.Cost). A
	// parent's limit bounds the tasks of its whole subtree.
	Limits map[string]int
	// DefaultLimit is the fleet-wide limit of every group not in Limits.
	// Zero leaves those groups to the base policy, uncoordinated.
	DefaultLimit int
	// GlobalLimit, if above 0, caps the tasks in flight across every group
	// and replica (each replica applies its share as GlobalMaxInFlight).
	GlobalLimit int
	// ExpectedReplicas sets the fallback. A replica that has lost Redis runs
	// at most min(its share, limit/ExpectedReplicas) of each limit, and at
	// least 1. Zero means the fallback is the share held.
	ExpectedReplicas int
	// Base returns a builder with the rest of the executor's policy. The
	// Coordinator builds every policy it applies from a fresh one. It sets
	// PerGroupMaxConcurrency and ConcurrencyResolver, and with a GlobalLimit
	// also GlobalMaxInFlight. A base map or resolver still decides the
	// groups that are not coordinated, as Base set them at New: those
	// concurrency settings are read once. A nil Base means NewPolicyBuilder.
	// It is called as limits change, so it must return at once. A panic
	// of Base is an error, as a builder that does not build is.
	Base func() *groupconc.PolicyBuilder
	// Prefix starts every Redis key of the fleet. It is "groupconc" if
	// empty. The keys share one hash slot, {Prefix}, so a cluster takes them
	// too. It may not hold a '}', which would end the hash tag early.
	Prefix string
	// Name names the replica in its member ID. If empty, it is the host name
	// and process ID.
	Name string
	// LeaseTTL is how long a replica's share outlives its last renewal. It
	// is 10s if 0.
	LeaseTTL time.Duration
	// RenewInterval is how often an idle replica renews its lease. It is a
	// third of LeaseTTL if 0.
	RenewInterval time.Duration
	// SyncInterval is how often a busy replica syncs its shares and demand
	// with Redis. A busy replica has tasks, or holds more than 1 of a limit.
	// It is 100ms if 0, and at most RenewInterval.
	SyncInterval time.Duration
}

// errOptions is wrapped by every error of New about its options.
var errOptions = errors.New("redisgc: invalid options")

// withDefaults returns o with its zero fields set, or an error naming every
// bad field.
func (o Options) withDefaults() (Options, error) {
	var bad []string
	for g, l := range o.Limits {
		if l < 1 {
			bad = append(bad, fmt.Sprintf("Limits[%s] = %d < 1", quote(g), l))
		}
	}
	if o.DefaultLimit < 0 {
		bad = append(bad, "DefaultLimit < 0")
	}
	if o.GlobalLimit < 0 {
		bad = append(bad, "GlobalLimit < 0")
	}
	if o.ExpectedReplicas < 0 {
		bad = append(bad, "ExpectedReplicas < 0")
	}
	if o.LeaseTTL < 0 || o.RenewInterval < 0 || o.SyncInterval < 0 {
		bad = append(bad, "negative interval")
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = 10 * time.Second
	}
	if o.LeaseTTL < 100*time.Millisecond {
		bad = append(bad, "LeaseTTL < 100ms")
	}
	if o.RenewInterval == 0 {
		o.RenewInterval = o.LeaseTTL / 3
	}
	if o.RenewInterval >= o.LeaseTTL/2 {
		bad = append(bad, "RenewInterval >= LeaseTTL/2")
	}
	if o.SyncInterval == 0 {
		o.SyncInterval = min(100*time.Millisecond, o.RenewInterval)
	}
	o.SyncInterval = min(o.SyncInterval, o.RenewInterval)
	if strings.Contains(o.Prefix, "}") {
		// Redis Cluster hashes the text between the first { and the first }
		// after it: with a } in Prefix that is not {Prefix}, and with one
		// first it is empty, so that each key hashes whole, to its own slot.
		bad = append(bad, fmt.Sprintf("Prefix %s holds a '}': the keys would not share the hash tag {Prefix}", quote(o.Prefix)))
	}
	if len(bad) > 0 {
		return o, fmt.Errorf("%w: %s", errOptions, strings.Join(bad, "; "))
	}
	o.Limits = maps.Clone(o.Limits)
	if o.Base == nil {
		o.Base = groupconc.NewPolicyBuilder
	}
	if o.Prefix == "" {
		o.Prefix = "groupconc"
	}
	return o, nil
}

// fleetLimit returns g's fleet limit, and false if g is not coordinated.
func (o *Options) fleetLimit(g string) (int, bool) {
	if l, ok := o.Limits[g]; ok {
		return l, true
	}
	return o.DefaultLimit, o.DefaultLimit > 0
}

// fallback returns the most a replica out of touch with Redis runs of a
// limit, given what it held.
func (o *Options) fallback(limit, held int) int {
	f := held
	if o.ExpectedReplicas > 0 {
		f = min(f, limit/o.ExpectedReplicas)
	}
	return max(f, 1)
}

// keys of the fleet's state in Redis.
func (o *Options) membersKey() string { return "{" + o.Prefix + "}:members" }
func (o *Options) bornKey() string    { return "{" + o.Prefix + "}:born" }
func (o *Options) serverKey() string  { return "{" + o.Prefix + "}:server" }
func (o *Options) globalKey() string  { return "{" + o.Prefix + "}:global" }
func (o *Options) seqKey(member string) string {
	return "{" + o.Prefix + "}:q:" + member
}
func (o *Options) groupKey(g string) string {
	return "{" + o.Prefix + "}:g:" + g
}
