package redisgc

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Redis Cluster fails over (CLUSTER FAILOVER on the replica of the node
// that holds the fleet's slot) while two replicas of the fleet share a
// limit. Their cluster clients follow the new primary. The local limits
// never sum above the limit, and the shares split again.
func TestAClusterFailoverKeepsTheFleetWithinItsLimit(t *testing.T) {
	clusterFailover(t, redis.ClusterOptions{})
}

// A cluster client that reads from replicas (ReadOnly) sends READONLY on
// every connection, so the demoted primary runs the sync itself, as a
// script is no write to it. The sync's READONLY error makes the client
// reload the cluster's slots at once: no replica of the fleet falls back.
func TestAClusterFailoverKeepsReadOnlyClientsConnected(t *testing.T) {
	clusterFailover(t, redis.ClusterOptions{ReadOnly: true})
}

// clusterFailover runs a cluster failover under a fleet of two replicas,
// whose clients have the options co.
func clusterFailover(t *testing.T, co redis.ClusterOptions) {
	if testing.Short() {
		t.Skip("runs a Redis Cluster through a failover")
	}
	primary, second := startClusterNode(t), startClusterProcess(t)
	ctx := context.Background()
	pc, rc := redis.NewClient(&redis.Options{Addr: primary}), redis.NewClient(&redis.Options{Addr: second})
	t.Cleanup(func() { _ = pc.Close(); _ = rc.Close() })
	host, port, _ := net.SplitHostPort(primary)
	if err := rc.ClusterMeet(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	id, err := pc.ClusterMyID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() bool { return rc.ClusterReplicate(ctx, id).Err() == nil },
		"the second node never learned the first")
	eventually(t, 10*time.Second, func() bool {
		info, _ := rc.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:up")
	}, "the second node never synced with the first")

	o := testOptions(12)
	var rs []*replica
	for range 2 {
		co.Addrs = []string{primary}
		cl := redis.NewClusterClient(&co)
		t.Cleanup(func() { _ = cl.Close() })
		r := startReplica(t, cl, o)
		r.exec.set("t", 20, 0)
		rs = append(rs, r)
	}
	sum := func() int {
		t.Helper()
		a, b := rs[0].exec.limit("t"), rs[1].exec.limit("t")
		if a+b > 12 {
			t.Fatalf("local limits %d and %d sum above the limit 12", a, b)
		}
		return a + b
	}
	split := func(while string) {
		t.Helper()
		eventually(t, 10*time.Second, func() bool {
			return sum() == 12 && rs[0].exec.limit("t") == 6 && rs[0].c.Status().Mode == ModeConnected &&
				rs[1].c.Status().Mode == ModeConnected
		}, "%s: the replicas never split 12: %+v, %+v", while, rs[0].c.Status(), rs[1].c.Status())
	}
	split("before the failover")

	if err := rc.ClusterFailover(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() bool { return role(ctx, rc) == "master" }, "the failover never completed")
	for deadline := time.Now().Add(o.LeaseTTL + o.RenewInterval); time.Now().Before(deadline); {
		rs[0].syncs(t, 1)
		sum()
		for i, r := range rs {
			if st := r.c.Status(); st.Mode == ModeFallback {
				t.Fatalf("replica %d fell back after the failover: %v", i, st.Err)
			}
		}
	}
	split("after the failover")
}
