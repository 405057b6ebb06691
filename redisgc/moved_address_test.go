package redisgc

import (
	"context"
	"testing"
	"time"
)

// A failover moves the address a replica dials to the new primary, as it
// moves a DNS name (a managed Redis's primary endpoint). The connections
// open before stay on the demoted primary. The sync fails there with a
// READONLY error, so the client drops such a connection and dials the
// address again: the replica joins the new primary.
func TestAReplicaFollowsItsAddressToTheNewPrimary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Redis primary and its replica through a failover")
	}
	p, r := startRedis(t), startRedis(t)
	// The replica's first sync starts at once, not after 5 s.
	if err := p.client(t).ConfigSet(context.Background(), "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	r.replicaOf(t, p.addr())
	dns := newFaultProxy(t, p.addr())
	a := startReplica(t, clientOf(t, dns.addr()), testOptions(12))
	a.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return a.exec.limit("t") == 12 }, "a never took the limit")

	failOver(t, p, r)
	dns.redirect(r.addr())
	o := testOptions(12).withDefaultsOrDie(t)
	rc, key := r.client(t), o.membersKey()
	joined := func(st Status) bool {
		if st.Mode != ModeConnected || st.Err != nil {
			return false
		}
		return rc.ZScore(context.Background(), key, st.Member).Err() == nil
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(10 * time.Second); ; <-tick.C {
		st := a.c.Status()
		if joined(st) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a never joined the new primary: mode %v, error %v", st.Mode, st.Err)
		}
	}
}
