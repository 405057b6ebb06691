package redisgc

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
)

//go:embed sync.lua
var syncSource string

// syncScript is the one script a replica runs, once per sync. It is run with
// EVALSHA, and with EVAL when the server does not have it cached (a
// restarted Redis).
var syncScript = redis.NewScript(syncSource)

// Modes of a sync.
const (
	syncJoin  = "join"  // a new member declares what it runs
	syncRenew = "renew" // a member renews its lease and settles its shares
	syncLeave = "leave" // a member stops renewing and gives back what is idle
)

// poolRequest is one pool of a sync, a group's limit or the global one.
type poolRequest struct {
	key         string
	limit, want int // want 0 means nothing to run here
	keep        int // what the member keeps (or declares, on join)
}

// poolResult is what Redis settled for one pool.
type poolResult struct {
	share   int // the member's share now
	target  int // the share it should shrink to, or may grow to, at most the limit
	used    int // the pool's capacity held by live members
	members int // live members of the fleet
}

// syncResult is the answer to one sync.
type syncResult struct {
	lost  bool          // the member's lease had expired, so it rejoins
	grace time.Duration // left of the grace of a fleet state created lately
	pools []poolResult
}

// errStale is the error of a sync that Redis refused, as it had run a later
// one of the member. That happens to a copy of a call, retried or late.
var errStale = errors.New("redisgc: sync: stale, Redis has run a later sync of this member")

// errReplica is the error of a sync sent to a server that is not a
// primary, such as a primary demoted by a failover.
var errReplica = errors.New("redisgc: sync: the server is a replica")

// replicaReply begins the script's error on a server that is not a
// primary. It is a READONLY error, which makes go-redis drop the
// connection and dial again: a DNS name a failover moved then leads to
// the new primary.
const replicaReply = "READONLY the server is a replica"

// runSync runs the sync script for member. seq is above that of every
// earlier sync of the member, so that Redis runs none of those after it.
// runSync checks the reply's values against the bounds the script keeps
// to, and returns an error naming the first one out of range, so that the
// replica applies none of them. No value is negative. A target is at most
// the pool's fleet limit. A share is at most the limit, or what the member
// keeps if that is more (a joining member declares what it runs, even
// beyond the limit, and keeps it while those tasks run). A broken or
// hostile server could otherwise have the replica run above the fleet
// limit. The replica
// handles such an error as it does a failed call: it keeps what it holds,
// never more, until its lease's deadline.
func runSync(ctx context.Context, c redis.Scripter, o *Options, member, mode string, seq uint64, pools []poolRequest) (syncResult, error) {
	keys := make([]string, 0, 4+len(pools))
	keys = append(keys, o.membersKey(), o.bornKey(), o.seqKey(member), o.serverKey())
	args := make([]any, 0, 4+3*len(pools))
	args = append(args, member, o.LeaseTTL.Milliseconds(), mode, seq)
	for _, p := range pools {
		keys = append(keys, p.key)
		args = append(args, p.limit, p.want, p.keep)
	}
	vals, err := syncScript.Run(ctx, c, keys, args...).Slice()
	if err != nil {
		if role, ok := strings.CutPrefix(err.Error(), replicaReply); ok {
			return syncResult{}, fmt.Errorf("%w%s: its writes would not reach the fleet's primary", errReplica, role)
		}
		return syncResult{}, fmt.Errorf("redisgc: sync: %w", err)
	}
	if len(vals) == 4 && vals[0] == "wrongtype" {
		return syncResult{}, wrongType(keys, vals[1:])
	}
	if len(vals) > 0 && vals[0] == "stale" {
		return syncResult{}, errStale
	}
	if len(vals) > 0 && vals[0] == "lost" {
		return syncResult{lost: true}, nil
	}
	if len(vals) != 2+4*len(pools) || vals[0] != "ok" {
		return syncResult{}, fmt.Errorf("redisgc: sync: unexpected reply %v", vals)
	}
	n := make([]int, len(vals)-1)
	for i, v := range vals[1:] {
		x, ok := v.(int64)
		if !ok {
			return syncResult{}, fmt.Errorf("redisgc: sync: unexpected value %v", v)
		}
		n[i] = int(x)
	}
	if n[0] < 0 {
		return syncResult{}, fmt.Errorf("redisgc: sync: reply out of range: grace %dms, want 0 or more", n[0])
	}
	r := syncResult{grace: time.Duration(n[0]) * time.Millisecond}
	for i, p := range pools {
		q := n[1+4*i:]
		res := poolResult{share: q[0], target: q[1], used: q[2], members: q[3]}
		if err := res.check(p); err != nil {
			return syncResult{}, fmt.Errorf("redisgc: sync: reply out of range for %s (fleet limit %d, kept %d): %w", quote(p.key), p.limit, p.keep, err)
		}
		r.pools = append(r.pools, res)
	}
	return r, nil
}

// wrongType returns the error of a sync that found a key of another type:
// the key, quoted and cut, as the script's reply names it by its index.
func wrongType(keys []string, v []any) error {
	i, ok := v[0].(int64)
	if !ok || i < 1 || int(i) > len(keys) {
		return fmt.Errorf("redisgc: sync: unexpected reply %v", v)
	}
	return fmt.Errorf("redisgc: sync: key %s holds a %v, want a %v or none", quote(keys[i-1]), v[1], v[2])
}

// check returns an error naming the first value of r outside the bounds
// the script keeps to for the request q (see runSync).
func (r poolResult) check(q poolRequest) error {
	most := max(q.limit, q.keep)
	switch {
	case r.share < 0 || r.share > most:
		return fmt.Errorf("share %d, want 0 to %d", r.share, most)
	case r.target < 0 || r.target > q.limit:
		// The local limit is at most the target, so never above the fleet
		// limit, whatever the replica still runs.
		return fmt.Errorf("target %d, want 0 to %d", r.target, q.limit)
	case r.used < 0:
		return fmt.Errorf("used %d, want 0 or more", r.used)
	case r.members < 0:
		return fmt.Errorf("members %d, want 0 or more", r.members)
	}
	return nil
}

// quote quotes s, a group key of any bytes or a Redis key that holds one,
// and cuts it to 64 bytes at most, before a character. So no newline or
// megabyte of it reaches a log.
func quote(s string) string {
	const limit = 64
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	n := limit
	for i := 0; i < utf8.UTFMax-1 && !utf8.RuneStart(s[n]); i++ {
		n-- // cut before a character, not through it
	}
	return strconv.Quote(s[:n]) + fmt.Sprintf("... (%d bytes)", len(s))
}
