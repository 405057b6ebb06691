package redisgc

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// replicaOf makes s a replica of primary, and waits until it has synced.
func (s *redisServer) replicaOf(t *testing.T, primary string) {
	t.Helper()
	host, port, _ := net.SplitHostPort(primary)
	c, ctx := s.client(t), context.Background()
	if err := c.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatalf("REPLICAOF %s on %s: %v", primary, s.addr(), err)
	}
	eventually(t, 10*time.Second, func() bool {
		info, _ := c.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	}, "%s never synced with its primary %s", s.addr(), primary)
}

// failOver runs FAILOVER on the primary from, whose one replica is to, and
// waits until to is the primary and from its replica. From then on, from
// answers every write with a READONLY error.
func failOver(t *testing.T, from, to *redisServer) {
	t.Helper()
	ctx := context.Background()
	if err := from.client(t).Do(ctx, "FAILOVER").Err(); err != nil {
		t.Fatalf("FAILOVER on %s: %v", from.addr(), err)
	}
	fc, tc := from.client(t), to.client(t)
	eventually(t, 10*time.Second, func() bool {
		return role(ctx, tc) == "master" && role(ctx, fc) == "slave"
	}, "FAILOVER from %s to %s never completed", from.addr(), to.addr())
}

// role returns the server's role, as ROLE gives it.
func role(ctx context.Context, c *redis.Client) string {
	v, err := c.Do(ctx, "ROLE").Slice()
	if err != nil || len(v) == 0 {
		return ""
	}
	r, _ := v[0].(string)
	return r
}

// A FAILOVER demotes the primary a replica reaches by its own address,
// while b and c follow the new primary (as through Sentinel or a virtual
// IP). Every sync of a then gets a READONLY error: a keeps its share, then
// falls back within its lease, and its status names the cause. The fleet
// runs at most its limit plus a's fallback, as in a partition. Once the
// address serves a primary again, a rejoins and the fleet is back within
// its limit.
func TestAReplicaLeftOnADemotedPrimaryFallsBackAndRejoinsWhenItIsPrimaryAgain(t *testing.T) {
	p, r := startRedis(t), startRedis(t)
	r.replicaOf(t, p.addr())
	sw := newFaultProxy(t, p.addr())
	f := newLiveFleet(t, faultLimit, faultExpected)
	a, b, c := f.add("a", p.addr()), f.add("b", sw.addr()), f.add("c", sw.addr())
	f.split(10*time.Second, faultEach, a, b, c)
	f.checkPeak(faultLimit, "connected,")

	failOver(t, p, r)
	sw.retarget(r.addr())
	f.await(10*time.Second, "b and c never took a's share", func() bool { return b.limit()+c.limit() == faultLimit })
	f.await(10*time.Second, "a never fell back", func() bool { return a.mode() == ModeFallback })
	a.checkFellBackInTime()
	f.syncsOf(b, 10)
	f.checkPeak(faultBound, "with a on the demoted primary,")
	if st, _ := a.status(); st.Mode != ModeFallback || !errors.Is(st.Err, errReplica) {
		t.Errorf("a on a read-only replica: mode %v, error %v, want fallback and an error saying the server is a replica", st.Mode, st.Err)
	}
	if got := a.limit(); got > faultLimit/faultExpected {
		t.Errorf("a on the demoted primary: limit %d, want its fallback %d", got, faultLimit/faultExpected)
	}

	failOver(t, r, p)
	sw.retarget(p.addr())
	f.split(10*time.Second, faultEach, a, b, c)
	f.checkPeak(faultBound, "as a came back,")
	f.syncsOf(b, 10)
	f.checkPeak(faultLimit, "healed,")
}

// A replica set writable (replica-read-only no) takes a sync's writes, but
// keeps them to itself: a replica of the fleet syncing there would count
// alone, and b, on the primary, would not see it. So the sync refuses to
// run on a replica, and a runs 1 until it reaches a primary.
func TestAReplicaThatReachesAWritableRedisReplicaDoesNotJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a Redis primary and its replica")
	}
	p, r := startRedis(t), startRedis(t)
	r.replicaOf(t, p.addr())
	ctx := context.Background()
	if err := r.client(t).ConfigSet(ctx, "replica-read-only", "no").Err(); err != nil {
		t.Fatal(err)
	}
	a := startReplica(t, r.client(t), testOptions(12))
	a.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return errors.Is(a.c.Status().Err, errReplica) || a.exec.limit("t") > 1 },
		"a never synced, nor got an error")
	b := startReplica(t, p.client(t), testOptions(12))
	b.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return b.exec.limit("t") > 1 }, "b never grew")
	b.syncs(t, 5)
	// b, alone in the fleet on the primary, takes all of it. a runs the 1
	// every replica runs without asking.
	if la, lb := a.exec.limit("t"), b.exec.limit("t"); la > 1 || lb > 12 {
		t.Errorf("a on a writable replica has %d, b on the primary %d, want 1 and at most 12", la, lb)
	}
	if st := a.c.Status(); st.Mode != ModeJoining || !errors.Is(st.Err, errReplica) {
		t.Errorf("a on a replica: mode %v, error %v, want joining and an error saying the server is a replica", st.Mode, st.Err)
	}
}
