package redisgc

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// recorder is a real client that keeps the last renewal it sent, so that a
// test can deliver a copy of it later, as TCP may.
type recorder struct {
	*redis.Client

	mu   sync.Mutex
	sha  string   // guarded by mu
	keys []string // guarded by mu: the last renewal's
	args []any    // guarded by mu: the last renewal's
}

func (r *recorder) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if args[2] == syncRenew {
		r.mu.Lock()
		r.sha, r.keys, r.args = sha, append([]string(nil), keys...), append([]any(nil), args...)
		r.mu.Unlock()
	}
	return r.Client.EvalSha(ctx, sha, keys, args...)
}

// last returns the last renewal sent.
func (r *recorder) last() (sha string, keys []string, args []any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sha, r.keys, r.args
}

// TestARenewalDeliveredLateChangesNothing: a client gives up on a renewal
// (its read timed out) while its bytes are still on their way. TCP
// delivers them after a later sync of the same member. That old renewal
// kept less than the replica runs now, and Redis used to lower the
// replica's share to it: another replica took the difference, and the
// fleet ran above its limit. Redis now runs no sync older than one it ran.
func TestARenewalDeliveredLateChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("moves shares between two replicas")
	}
	s := startRedis(t)
	rec := &recorder{Client: s.client(t)}
	f := startLateFleet(t, rec, s.client(t))
	f.run(f.a, 2)
	a0 := f.a.coord.Status().LastSync
	eventually(t, 10*time.Second, func() bool { return f.a.coord.Status().LastSync.After(a0) }, "a never renewed")
	sha, keys, args := rec.last() // it keeps 2: a's running tasks
	f.growAndContend()
	// The old renewal comes in now.
	_ = s.client(t).EvalSha(context.Background(), sha, keys, args...).Err()
	f.checkWithinLimit()
}

// lateFleet is two replicas sharing a limit of 8 on group "t": a, whose
// old renewal reaches Redis late, and b, short of slots as it does.
type lateFleet struct {
	t    *testing.T
	a, b *execReplica
	gate chan struct{}
}

const lateLimit = 8

// startLateFleet starts a on client ca and b on cb. A lease of 3s does not
// end while a's renewal is held.
func startLateFleet(t *testing.T, ca, cb redis.Scripter) *lateFleet {
	opts := fleetOpts(map[string]int{"t": lateLimit})
	opts.LeaseTTL, opts.RenewInterval = 3*time.Second, time.Second
	f := &lateFleet{t: t, a: startReplicaOn(t, ca, "a", opts), b: startReplicaOn(t, cb, "b", opts), gate: make(chan struct{})}
	t.Cleanup(func() { close(f.gate) }) // before the replicas shut down
	return f
}

// run has r run n tasks of "t" in all, and waits until they run.
func (f *lateFleet) run(r *execReplica, n int) {
	f.t.Helper()
	submitGated(f.t, r.exec, "t", n-r.exec.Stats().Running, f.gate)
	eventually(f.t, 10*time.Second, func() bool { return r.limit("t") >= n && r.exec.Stats().Running == n }, "never ran %d", n)
}

// growAndContend has a run 6, then b want 8: b runs its 1 and the 1 left.
// Both are short, so a's fair share is 4, and it would not grow back.
func (f *lateFleet) growAndContend() {
	f.t.Helper()
	f.run(f.a, 6)
	submitGated(f.t, f.b.exec, "t", lateLimit, f.gate)
	eventually(f.t, 10*time.Second, func() bool {
		return f.b.limit("t") == 2 && f.b.exec.Stats().Running == 2 && f.a.limit("t") == 4
	}, "b never ran 2 beside a's 6")
}

// checkWithinLimit checks, over 15 syncs of b, that the fleet runs at most
// its limit, and that b runs only the 2 it did.
func (f *lateFleet) checkWithinLimit() {
	f.t.Helper()
	seen, last := 0, time.Time{}
	eventually(f.t, 10*time.Second, func() bool {
		if n := f.a.exec.Stats().Running + f.b.exec.Stats().Running; n > lateLimit {
			f.t.Fatalf("the fleet runs %d tasks, above its limit %d: a %+v, b %+v",
				n, lateLimit, f.a.coord.Status().Groups, f.b.coord.Status().Groups)
		}
		if st := f.b.coord.Status(); st.Mode == ModeConnected && st.LastSync.After(last) {
			seen, last = seen+1, st.LastSync
		}
		return seen >= 15
	}, "b never synced 15 times")
	if got := f.b.limit("t"); got != 2 {
		f.t.Errorf("b's limit %d, want 2: a still runs 6", got)
	}
}

// TestScriptRunsNoSyncOlderThanOneItRan: a late or retried copy of a sync,
// whatever its mode, is refused and changes nothing.
func TestScriptRunsNoSyncOlderThanOneItRan(t *testing.T) {
	f := newScriptFleet(t, 5*time.Second)
	ctx := context.Background()
	run := func(mode string, seq uint64, want, keep int) (syncResult, error) {
		return runSync(ctx, f.c, &f.opts, "a", mode, seq,
			[]poolRequest{{key: f.opts.groupKey("g"), limit: 8, want: want, keep: keep}})
	}
	for _, s := range []struct {
		mode       string
		seq        uint64
		want, keep int
	}{{syncJoin, 1, 2, 2}, {syncRenew, 2, 2, 2}, {syncRenew, 4, 6, 2}, {syncRenew, 5, 6, 6}} {
		if _, err := run(s.mode, s.seq, s.want, s.keep); err != nil {
			t.Fatalf("%s %d: %v", s.mode, s.seq, err)
		}
	}
	share := func() string { return f.c.HGet(ctx, f.opts.groupKey("g"), "s:a").Val() }
	if got := share(); got != "6" {
		t.Fatalf("a's share %s, want 6", got)
	}
	for _, s := range []struct {
		mode string
		seq  uint64
	}{{syncRenew, 2}, {syncRenew, 3}, {syncRenew, 5}, {syncJoin, 1}, {syncLeave, 4}} {
		if _, err := run(s.mode, s.seq, 0, 0); !errors.Is(err, errStale) {
			t.Errorf("a %s with seq %d after seq 5: got %v, want errStale", s.mode, s.seq, err)
		}
		if got := share(); got != "6" {
			t.Fatalf("after a %s with seq %d: a's share %s, want 6", s.mode, s.seq, got)
		}
	}
}

// TestARenewalHeldOnAStuckLinkChangesNothingOnceDelivered: the same through
// a proxy. One connection stops forwarding, while new ones go through. The
// client times out on the renewal it holds, and the replica goes on over
// a new connection and grows. Then the stuck bytes reach Redis.
func TestARenewalHeldOnAStuckLinkChangesNothingOnceDelivered(t *testing.T) {
	if testing.Short() {
		t.Skip("moves shares between two replicas")
	}
	s := startRedis(t)
	p := newFaultProxy(t, s.addr())
	client := redis.NewClient(&redis.Options{Addr: p.addr(), ReadTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	f := startLateFleet(t, client, s.client(t))
	t.Cleanup(p.restore)
	f.run(f.a, 2)
	p.freezeOpen() // the next renewal, keeping 2, is held
	eventually(t, 10*time.Second, func() bool { return p.heldStuck() > 0 }, "no renewal was held")
	f.growAndContend()
	p.restore() // the held renewal reaches Redis
	f.checkWithinLimit()
}
