package redisgc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// sentinelMaster is the name the Sentinel gives the primary it monitors.
const sentinelMaster = "mymaster"

// sentinelPair starts a primary, its replica, and a Sentinel that
// monitors them, ready to promote the replica. Then it starts three busy
// replicas of the fleet, each on a client of redis.NewFailoverClient with
// no timeouts of its own, and waits until they split the limit.
func sentinelPair(t *testing.T) (p, r, s *redisServer, f *liveFleet, rs []*liveReplica) {
	f = newLiveFleet(t, faultLimit, faultExpected)
	p, r = startRedis(t), startRedis(t)
	ctx := context.Background()
	for _, x := range []*redisServer{p, r} {
		// A replica's first sync starts at once, not after 5 s.
		if err := x.client(t).ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
			t.Fatal(err)
		}
	}
	r.replicaOf(t, p.addr())
	s = startSentinel(t, p)
	for _, name := range []string{"a", "b", "c"} {
		client := redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName:    sentinelMaster,
			SentinelAddrs: []string{s.addr()},
		})
		t.Cleanup(func() { _ = client.Close() })
		rs = append(rs, f.addClient(name, client))
	}
	f.split(10*time.Second, faultEach, rs...)
	f.checkPeak(faultLimit, "connected,")
	if a := primaryOf(ctx, s); a != p.addr() {
		t.Fatalf("the Sentinel gives %q for the primary before any failover, want %s", a, p.addr())
	}
	return p, r, s, f, rs
}

// startSentinel starts a Sentinel that monitors primary, with a quorum of
// 1 and short delays. The primary's replica must be attached already: the
// Sentinel learns it from the primary's first INFO. It waits until the
// Sentinel could promote the replica.
func startSentinel(t *testing.T, primary *redisServer) *redisServer {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 1\n", sentinelMaster, primary.port) +
		fmt.Sprintf("sentinel down-after-milliseconds %s 1000\n", sentinelMaster) +
		fmt.Sprintf("sentinel failover-timeout %s 2000\n", sentinelMaster)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir, conf, "--sentinel")
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.addr()})
	t.Cleanup(func() { _ = sc.Close() })
	// The Sentinel promotes only a replica it reached, and whose INFO is
	// fresh.
	eventually(t, 10*time.Second, func() bool {
		rs, err := sc.Replicas(context.Background(), sentinelMaster).Result()
		if err != nil || len(rs) != 1 {
			return false
		}
		refresh, err := strconv.Atoi(rs[0]["info-refresh"])
		return err == nil && refresh < 2000 && rs[0]["flags"] == "slave" && rs[0]["master-link-status"] == "ok"
	}, "the Sentinel never reached the replica")
	return s
}

// primaryOf returns the address the Sentinel gives for its primary.
func primaryOf(ctx context.Context, s *redisServer) string {
	c := redis.NewSentinelClient(&redis.Options{Addr: s.addr()})
	defer c.Close()
	a, err := c.GetMasterAddrByName(ctx, sentinelMaster).Result()
	if err != nil || len(a) != 2 {
		return ""
	}
	return net.JoinHostPort(a[0], a[1])
}

// seqsOn returns the sequence number of each member's last sync, as the
// server holds them now.
func seqsOn(ctx context.Context, f *liveFleet, s *redisServer) map[string]int64 {
	f.t.Helper()
	o := f.opts.withDefaultsOrDie(f.t)
	c, prefix := s.client(f.t), o.seqKey("")
	keys, err := c.Keys(ctx, prefix+"*").Result()
	if err != nil {
		f.t.Fatal(err)
	}
	seqs := map[string]int64{}
	for _, k := range keys {
		seq, err := c.Get(ctx, k).Int64()
		if err != nil && !errors.Is(err, redis.Nil) { // a key may expire meanwhile
			f.t.Fatal(err)
		}
		seqs[strings.TrimPrefix(k, prefix)] = seq
	}
	return seqs
}

// rejoined waits until every replica is connected and has synced on
// primary since it held the sequence numbers seqs, and the replicas split
// the limit again. The state a primary had as a replica holds the members,
// so a member there is no sign that a replica reached it.
func rejoined(f *liveFleet, primary *redisServer, seqs map[string]int64, rs ...*liveReplica) {
	f.t.Helper()
	o := f.opts.withDefaultsOrDie(f.t)
	pc := primary.client(f.t)
	f.await(10*time.Second, "the replicas never rejoined on the new primary", func() bool {
		for _, r := range rs {
			st, _ := r.status()
			if st.Mode != ModeConnected || st.Err != nil || r.limit() != faultEach {
				return false
			}
			seq, err := pc.Get(context.Background(), o.seqKey(st.Member)).Int64()
			if err != nil || seq <= seqs[st.Member] {
				return false
			}
		}
		return true
	})
	f.syncsOf(rs[0], 5)
}

// Sentinel promotes the replica (SENTINEL FAILOVER) while the fleet is
// busy. It tells the failover clients, which drop their connections to
// the old primary and dial the new one. The old primary stays a writable
// primary for a while, but no replica of the fleet syncs there any more.
// Every replica joins the new primary and the shares split again; the
// fleet never runs above its limit, and every task runs.
func TestASentinelFailoverKeepsTheFleetWithinItsLimit(t *testing.T) {
	p, r, s, f, rs := sentinelPair(t)
	ctx := context.Background()
	if err := s.client(t).Do(ctx, "SENTINEL", "FAILOVER", sentinelMaster).Err(); err != nil {
		t.Fatalf("SENTINEL FAILOVER: %v", err)
	}
	rc := r.client(t)
	eventually(t, 10*time.Second, func() bool { return primaryOf(ctx, s) == r.addr() && role(ctx, rc) == "master" },
		"the Sentinel never promoted the replica")
	rejoined(f, r, seqsOn(ctx, f, r), rs...)
	f.checkPeak(faultLimit, "through the failover,")
	// p is still a primary, until the Sentinel makes it a replica (10 s
	// after the switch with Redis 7). A replica of the fleet that synced
	// there would count alone: none does.
	pc := p.client(t)
	if role(ctx, pc) == "master" {
		before := scriptCalls(ctx, t, pc)
		f.syncsOf(rs[0], 10)
		if after := scriptCalls(ctx, t, pc); after != before && role(ctx, pc) == "master" {
			t.Errorf("the old primary ran %d syncs after every replica joined the new one, want none", after-before)
		}
	}
	f.drain(5*time.Second, rs...)
}

// scriptCalls returns how many scripts the server has run.
func scriptCalls(ctx context.Context, t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(line, "cmdstat_eval"); ok {
			_, calls, _ := strings.Cut(rest, "calls=")
			k, _ := strconv.Atoi(strings.Split(calls, ",")[0])
			n += k
		}
	}
	return n
}

// The primary is killed (SIGKILL) while the fleet is busy. Every replica
// holds, then falls back at its lease's deadline (unless Sentinel is
// quicker): the fleet runs at most what it held. Once Sentinel has
// promoted the replica, every replica joins it, and the shares split
// again. Every task runs.
func TestASentinelFailoverAfterThePrimaryIsKilledKeepsTheFleetWithinItsLimit(t *testing.T) {
	p, r, s, f, rs := sentinelPair(t)
	ctx := context.Background()
	p.kill()
	rc := r.client(t)
	eventually(t, 10*time.Second, func() bool { return primaryOf(ctx, s) == r.addr() && role(ctx, rc) == "master" },
		"the Sentinel never promoted the replica")
	rejoined(f, r, seqsOn(ctx, f, r), rs...)
	f.checkPeak(faultLimit, "through the failover,")
	f.drain(5*time.Second, rs...)
}
