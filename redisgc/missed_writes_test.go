package redisgc

import (
	"context"
	"testing"
	"time"
)

// running returns how many tasks of g the executor runs now.
func (f *fakeExec) running(g string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runningLocked(g)
}

// A replica of Redis is promoted after it missed the last writes: a grew
// from 6 to 11 of 12 as b went idle, and runs 11 tasks. The new primary
// still counts 6 for a and 6 for b. b is busy again, and its first syncs
// reach the new primary before a's, whose link is slow to follow. Redis
// must not let b grow into what a runs: the fleet stays within 12. Once a's
// tasks end, the shares split again.
func TestAFailoverThatMissedWritesKeepsTheFleetWithinItsLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two Redis servers through a failover")
	}
	p, r := startRedis(t), startRedis(t)
	repl := newFaultProxy(t, p.addr()) // r's replication link
	r.replicaOf(t, repl.addr())
	t.Cleanup(repl.restore)
	aLink, bLink := newFaultProxy(t, p.addr()), newFaultProxy(t, p.addr())
	t.Cleanup(aLink.restore)
	o := testOptions(12)
	// A lease of 3 s: the grace after the failover is one, and a must
	// reach the new primary within it, also on a loaded machine.
	o.LeaseTTL, o.RenewInterval = 3*time.Second, 300*time.Millisecond
	a, b := startReplica(t, clientOf(t, aLink.addr()), o), startReplica(t, clientOf(t, bLink.addr()), o)
	a.exec.set("t", 20, 0)
	b.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return a.exec.limit("t") == 6 && b.exec.limit("t") == 6 }, "a and b never split 12")

	// r has the split, then misses every write: b gives its share back, and
	// a grows to 11 and runs it.
	d := o.withDefaultsOrDie(t)
	rc, key := r.client(t), d.groupKey("t")
	eventually(t, 5*time.Second, func() bool {
		sa, _ := rc.HGet(context.Background(), key, "s:"+a.c.Status().Member).Result()
		sb, _ := rc.HGet(context.Background(), key, "s:"+b.c.Status().Member).Result()
		return sa == "6" && sb == "6"
	}, "the replica never had the split")
	repl.freeze()
	b.exec.set("t", 0, 0)
	eventually(t, 5*time.Second, func() bool { return a.exec.limit("t") == 11 }, "a never took 11")
	a.exec.set("t", 20, 11)

	// r is promoted. a's link holds its syncs a while; b's reaches r at once.
	aLink.freeze()
	if err := rc.Do(context.Background(), "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	aLink.retarget(r.addr())
	bLink.retarget(r.addr())
	b.exec.set("t", 20, 0)
	check := func(while string) {
		t.Helper()
		if got := a.exec.running("t") + b.exec.running("t"); got > 12 {
			t.Fatalf("%s: a runs %d, b %d: %d at once, above the limit 12", while, a.exec.running("t"), b.exec.running("t"), got)
		}
	}
	// Held for a third of the grace: past it, a cut-off a's tasks would
	// count no more than in a partition.
	for deadline := time.Now().Add(o.LeaseTTL / 3); time.Now().Before(deadline); {
		b.syncs(t, 1)
		check("with a's link held")
	}
	aLink.restore()
	// Past a lease TTL, in case the new primary only holds b back a while.
	for deadline := time.Now().Add(o.LeaseTTL + o.RenewInterval); time.Now().Before(deadline); {
		b.syncs(t, 1)
		check("a's 11 tasks running, b busy")
	}
	a.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return a.exec.limit("t") == 6 && b.exec.limit("t") == 6 },
		"a and b never split 12 again: a %d, b %d", a.exec.limit("t"), b.exec.limit("t"))
	if mode := a.c.Status().Mode; mode != ModeConnected {
		t.Errorf("a after the failover: mode %v, want connected", mode)
	}
}

// TestScriptANewReplicationIDStartsAGrace: the first sync on a server keeps
// its replication ID, and starts no grace. A sync that finds another ID
// there runs on another server (a failover, or a restart): the fleet state
// is new, so nobody grows for a TTL.
func TestScriptANewReplicationIDStartsAGrace(t *testing.T) {
	f := newScriptFleet(t, 5*time.Second)
	if r := f.sync("a", syncJoin, "g", 10, 5, 1); r.grace != 0 || r.pools[0].share != 5 {
		t.Fatalf("first sync on the server: got %+v, want share 5 and no grace", r)
	}
	if err := f.c.Set(context.Background(), f.opts.serverKey(), "0123456789abcdef", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r := f.sync("a", syncRenew, "g", 10, 8, 5)
	if r.grace <= 0 || r.pools[0].share != 5 {
		t.Fatalf("after another server's sync: got %+v, want a grace and share 5 still", r)
	}
	if r := f.sync("a", syncRenew, "g", 10, 8, 5); r.grace <= 0 || r.grace > f.opts.LeaseTTL || r.pools[0].share != 5 {
		t.Fatalf("next sync: got %+v, want the grace going on, and share 5 still", r)
	}
}
