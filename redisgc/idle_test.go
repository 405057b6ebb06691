package redisgc

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// counting is a client that counts its script calls.
type counting struct {
	redis.Scripter
	calls atomic.Int64
}

func (c *counting) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	c.calls.Add(1)
	return c.Scripter.EvalSha(ctx, sha, keys, args...)
}

// TestAnIdleReplicaRenewsEveryRenewInterval: with nothing to run, a replica
// calls Redis about once a RenewInterval, not every SyncInterval.
func TestAnIdleReplicaRenewsEveryRenewInterval(t *testing.T) {
	s := startRedis(t)
	client := &counting{Scripter: s.client(t)}
	o := testOptions(12)
	o.LeaseTTL, o.RenewInterval = 3*time.Second, time.Second/2 // a SyncInterval of 20ms
	r := startReplica(t, client, o)
	eventually(t, 5*time.Second, func() bool { return r.c.Status().Mode == ModeConnected }, "r never joined")
	before := client.calls.Load()
	<-time.After(4 * o.RenewInterval)
	if n := client.calls.Load() - before; n > 8 {
		t.Errorf("idle for 4 RenewIntervals: %d calls to Redis, want about 4", n)
	}
}

// TestAnIdleReplicaGivesBackItsGlobalShare: a replica idle for a
// RenewInterval gives back what it held of the global limit once another
// is short of it.
func TestAnIdleReplicaGivesBackItsGlobalShare(t *testing.T) {
	s := startRedis(t)
	o := testOptions(0)
	o.Limits, o.GlobalLimit = nil, 8
	a := startReplica(t, s.client(t), o)
	b := startReplica(t, s.client(t), o)
	a.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return a.exec.globalLimit() == 7 }, "a never took the 7 b does not hold")
	a.exec.set("t", 0, 0)
	b.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return b.exec.globalLimit() == 7 }, "a never gave its global share back")
}

// TestAGroupWantingOneLeavesTheStatus: a group that holds and wants no more
// than the 1 every replica runs without asking is not listed in
// Status.Groups, even while a task of it runs.
func TestAGroupWantingOneLeavesTheStatus(t *testing.T) {
	s := startRedis(t)
	a := startReplica(t, s.client(t), testOptions(12))
	b := startReplica(t, s.client(t), testOptions(12))
	a.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return a.exec.limit("t") == 11 }, "a never took the 11 b does not hold")
	a.exec.set("t", 1, 0)
	b.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return b.exec.limit("t") == 11 && len(a.c.Status().Groups) == 0 },
		"a's group wanting 1 is still listed")
}
