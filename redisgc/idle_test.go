package redisgc

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestAnIdleReplicaRenewsEveryRenewInterval: with nothing to run, a replica
// calls Redis once a RenewInterval, not every SyncInterval. In fake time,
// so the count is exact.
func TestAnIdleReplicaRenewsEveryRenewInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		ok := replying(12, 12, 12, 1)
		client := fakeScripter{reply: func(ctx context.Context, keys []string) *redis.Cmd {
			calls.Add(1)
			return ok.reply(ctx, keys)
		}}
		o := testOptions(12)
		o.LeaseTTL, o.RenewInterval = 3*time.Second, time.Second/2 // a SyncInterval of 20ms
		r := startReplica(t, client, o)
		eventually(t, 5*time.Second, func() bool { return r.c.Status().Mode == ModeConnected }, "r never joined")
		if n, _ := callsOver(4*o.RenewInterval, &calls); n != 4 {
			t.Errorf("idle for 4 RenewIntervals: %d calls to Redis, want 4", n)
		}
	})
}

// callsOver returns how many calls a wait of d in fake time sees, and how
// many came before it. Every goroutine of the bubble is blocked at both ends.
func callsOver(d time.Duration, calls *atomic.Int64) (n, before int64) {
	synctest.Wait()
	before = calls.Load()
	time.Sleep(d)
	synctest.Wait()
	return calls.Load() - before, before
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
