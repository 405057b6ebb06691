package redisgc

import "time"

// Mode is the state of a replica's lease.
type Mode int

const (
	// ModeJoining means the replica has not joined the fleet yet, and runs 1
	// of each coordinated limit.
	ModeJoining Mode = iota
	// ModeConnected means the lease is renewed, and the replica runs its
	// shares.
	ModeConnected
	// ModeHolding means Redis did not answer, and the lease may still be
	// live. The replica keeps what it holds, never more, and keeps trying.
	ModeHolding
	// ModeFallback means the lease may have expired. The replica runs its
	// fallback limits until it joins again.
	ModeFallback
	// ModeStopped means Run has returned. The executor keeps the fallback.
	ModeStopped
)

// String returns the mode's name.
func (m Mode) String() string {
	switch m {
	case ModeJoining:
		return "joining"
	case ModeConnected:
		return "connected"
	case ModeHolding:
		return "holding"
	case ModeFallback:
		return "fallback"
	case ModeStopped:
		return "stopped"
	}
	return "unknown"
}

// Share is a replica's part of one fleet limit.
type Share struct {
	Group      string // the group, "" for the global limit
	FleetLimit int    // the limit across the fleet
	Share      int    // what Redis counts for this replica (as last known)
	Limit      int    // what the executor applies, at most Share
	FleetUsed  int    // the fleet's capacity held by live replicas, as last seen
	Members    int    // live replicas, as last seen
}

// Status is a snapshot of a Coordinator.
type Status struct {
	Member   string    // the lease's member ID, "" when it has none
	Mode     Mode      // the lease's state
	LastSync time.Time // the last successful sync with Redis
	// Err is the last sync's error, nil if it succeeded. A reply out of the
	// script's bounds is one: a negative value, a target above the fleet
	// limit, or a share above it (and above what the replica holds or runs,
	// if more). The replica applies none of it, as if the call had failed.
	// A sync sent to a Redis replica fails too, with an error saying so: a
	// failover demoted the primary the client reaches.
	Err error
	// Groups lists the coordinated groups holding or wanting more than 1 of
	// their limit, in no particular order. Every other coordinated group
	// runs at 1.
	Groups []Share
	// Global is the global limit's share, or zero without a GlobalLimit.
	Global Share
}
