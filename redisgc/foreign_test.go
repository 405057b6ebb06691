package redisgc

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kobe/groupconc"
)

// A replica whose tasks are gone clears the want it left in the global
// pool. Here b wanted 5 of the global limit while a held the rest, and
// then its tasks were cancelled. Its want stayed, and held a to a fair
// split with it, for good, as a's tasks turned over.
func TestAWantLeftInTheGlobalPoolIsClearedOnceItsTasksAreGone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two replicas")
	}
	s := startRedis(t)
	opts := fleetOpts(nil)
	opts.GlobalLimit = 10
	a := startExecReplica(t, s, "a", opts)
	b := startExecReplica(t, s, "b", opts)
	keys := make([]string, 20) // a keeps 20 tasks in flight
	for i := range keys {
		keys[i] = fmt.Sprint("ga", i)
	}
	first, then := make(chan struct{}), make(chan struct{})
	a.gated(t, first, keys...)
	eventually(t, 5*time.Second, func() bool { return a.coord.Status().Global.Limit == 9 && a.exec.Stats().Running == 9 },
		"a never ran 9 of 10: %+v", a.coord.Status().Global)

	ctx, cancel := context.WithCancel(context.Background())
	for i := range 5 {
		if _, err := groupconc.Submit(ctx, b.exec, fmt.Sprint("gb", i), "y", func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	admin := s.client(t)
	global := (&Options{Prefix: "groupconc"}).globalKey()
	wantOfB := func() string {
		h, _ := admin.HGetAll(context.Background(), global).Result()
		for k, v := range h {
			if strings.HasPrefix(k, "w:b") {
				return v
			}
		}
		return ""
	}
	eventually(t, 5*time.Second, func() bool { return wantOfB() == "5" }, "b's want of 5 never reached Redis")
	cancel()
	a.gated(t, then, keys...)
	t.Cleanup(func() { close(then) })
	close(first) // a's running tasks end, and its share is split again
	eventually(t, 5*time.Second, func() bool {
		w := wantOfB()
		return (w == "" || w == "1") && a.coord.Status().Global.Limit == 9
	}, "b wants %q in Redis and a is held to %d of 10 after b's tasks ended", wantOfB(), a.coord.Status().Global.Limit)
}

// A key of the fleet that holds another type (another program's) fails the
// sync with an error that names it, and nothing is written.
func TestAKeyOfAnotherTypeFailsTheSyncNamingIt(t *testing.T) {
	s := startRedis(t)
	admin := s.client(t)
	if err := admin.Set(context.Background(), "{groupconc}:g:t", "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r := startExecReplica(t, s, "a", fleetOpts(map[string]int{"t": 4}))
	gate := make(chan struct{})
	r.gated(t, gate, "t", "t", "t")
	t.Cleanup(func() { close(gate) })
	eventually(t, 5*time.Second, func() bool {
		err := r.coord.Status().Err
		return err != nil && strings.Contains(err.Error(), `"{groupconc}:g:t" holds a string`)
	}, "the sync's error %v does not name the key", r.coord.Status().Err)
	if v, _ := admin.Get(context.Background(), "{groupconc}:g:t").Result(); v != "not a hash" {
		t.Errorf("the key now holds %q", v)
	}
}

// The fleet's keys share one hash slot, so a Redis Cluster takes them: two
// replicas split a group's limit through a one-node cluster.
func TestTheFleetSharesALimitThroughARedisCluster(t *testing.T) {
	addr := startClusterNode(t)
	opts := fleetOpts(map[string]int{"t": 4})
	var rs []*execReplica
	for _, name := range []string{"a", "b"} {
		cl := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}})
		t.Cleanup(func() { _ = cl.Close() })
		r := startReplicaOn(t, cl, name, opts)
		gate := make(chan struct{})
		r.gated(t, gate, "t", "t", "t", "t")
		t.Cleanup(func() { close(gate) })
		rs = append(rs, r)
	}
	eventually(t, 5*time.Second, func() bool { return rs[0].limit("t") == 2 && rs[1].limit("t") == 2 },
		"no even split through the cluster: %+v, %+v", rs[0].coord.Status(), rs[1].coord.Status())
}

// gated submits a task to each of keys, which runs until gate is closed.
// The test waits for them as it ends: close gate in a cleanup registered
// after this call.
func (r *execReplica) gated(t *testing.T, gate <-chan struct{}, keys ...string) {
	t.Helper()
	for _, key := range keys {
		h, err := groupconc.Submit(context.Background(), r.exec, key, "x", func(context.Context) (int, error) {
			<-gate
			return 0, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Wait() })
	}
}

// startClusterNode starts a redis-server as a one-node cluster that owns
// every slot, and returns its address.
func startClusterNode(t *testing.T) string {
	t.Helper()
	addr := startClusterProcess(t)
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	slots := []any{"CLUSTER", "ADDSLOTS"} // ADDSLOTSRANGE is Redis 7's
	for i := range 16384 {
		slots = append(slots, i)
	}
	if err := c.Do(ctx, slots...).Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() bool {
		info, _ := c.ClusterInfo(ctx).Result()
		return strings.Contains(info, "cluster_state:ok")
	}, "the cluster never came up")
	return addr
}

// startClusterProcess starts a redis-server as a cluster node that owns no
// slot, and returns its address once it answers.
func startClusterProcess(t *testing.T) string {
	t.Helper()
	bin := redisBinary(t)
	dir := t.TempDir()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := exec.Command(bin, "--port", addr[len("127.0.0.1:"):], "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	eventually(t, 10*time.Second, func() bool { return c.Ping(ctx).Err() == nil }, "the cluster node never answered")
	return addr
}
