package redisgc

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// scriptFleet calls the sync script directly, as replicas would.
type scriptFleet struct {
	t    *testing.T
	c    *redis.Client
	opts Options
	seq  uint64 // the last sync's sequence number
}

// newScriptFleet starts a server whose fleet state is past its grace: born
// long ago, with a member whose lease expired long ago (a state with no
// members key at all is new).
func newScriptFleet(t *testing.T, ttl time.Duration) *scriptFleet {
	s := startRedis(t)
	o, err := Options{LeaseTTL: ttl}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	f := &scriptFleet{t: t, c: s.client(t), opts: o}
	ctx := context.Background()
	if err := f.c.Set(ctx, o.bornKey(), 0, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.c.ZAdd(ctx, o.membersKey(), redis.Z{Score: 1, Member: "gone"}).Err(); err != nil {
		t.Fatal(err)
	}
	return f
}

// sync runs one sync of member over one group's pool and returns its result.
func (f *scriptFleet) sync(member, mode, group string, limit, want, keep int) syncResult {
	f.t.Helper()
	f.seq++
	r, err := runSync(context.Background(), f.c, &f.opts, member, mode, f.seq,
		[]poolRequest{{key: f.opts.groupKey(group), limit: limit, want: want, keep: keep}})
	if err != nil {
		f.t.Fatalf("sync %s %s: %v", member, mode, err)
	}
	return r
}

func (f *scriptFleet) pool(member, mode, group string, limit, want, keep int) poolResult {
	f.t.Helper()
	r := f.sync(member, mode, group, limit, want, keep)
	if r.lost {
		f.t.Fatalf("sync %s %s: lost", member, mode)
	}
	return r.pools[0]
}

func TestScriptGrowsSharesOnlyFromFreeCapacityAndSplitsFairlyUnderContention(t *testing.T) {
	f := newScriptFleet(t, 5*time.Second)
	a := f.pool("a", syncJoin, "g", 10, 10, 1)
	if a.share != 10 || a.used != 10 {
		t.Fatalf("a alone: got share %d used %d, want 10 and 10", a.share, a.used)
	}
	// b's 1 is implicit: it runs it without asking, so the fleet is over.
	b := f.pool("b", syncJoin, "g", 10, 10, 1)
	if b.share != 1 || b.target != 5 || b.used != 11 {
		t.Fatalf("b joins: got %+v, want share 1, target 5, used 11", b)
	}
	a = f.pool("a", syncRenew, "g", 10, 10, 10)
	if a.share != 10 || a.target != 5 {
		t.Fatalf("a contended: got %+v, want share 10, target 5", a)
	}
	// a lowered its limit, but 7 still run: it keeps 7.
	a = f.pool("a", syncRenew, "g", 10, 10, 7)
	if a.share != 7 {
		t.Fatalf("a draining: got share %d, want 7", a.share)
	}
	b = f.pool("b", syncRenew, "g", 10, 10, 1)
	if b.share != 3 || b.used != 10 {
		t.Fatalf("b takes what is free: got %+v, want share 3, used 10", b)
	}
	a = f.pool("a", syncRenew, "g", 10, 10, 5)
	b = f.pool("b", syncRenew, "g", 10, 10, 3)
	if a.share != 5 || b.share != 5 || b.used != 10 {
		t.Fatalf("settled: got a %+v b %+v, want 5 and 5", a, b)
	}
}

func TestScriptFairShareGivesSmallWantsTheirWantAndSplitsTheRest(t *testing.T) {
	f := newScriptFleet(t, 5*time.Second)
	f.pool("a", syncJoin, "g", 10, 2, 1)
	f.pool("b", syncJoin, "g", 10, 9, 1)
	f.pool("c", syncJoin, "g", 10, 9, 1)
	f.pool("d", syncJoin, "g", 10, 1, 1)
	// wants 2+9+9+1 > 10: d gets 1, a 2, b and c split 7 (4 to the first).
	for _, m := range []struct {
		id         string
		want, fair int
	}{{"a", 2, 2}, {"b", 9, 4}, {"c", 9, 3}, {"d", 1, 1}} {
		r := f.pool(m.id, syncRenew, "g", 10, m.want, 1)
		if r.target != m.fair {
			t.Errorf("%s: got target %d, want %d", m.id, r.target, m.fair)
		}
	}
}

func TestScriptGivesUnusedShareBackOnlyWhenAnotherReplicaIsShort(t *testing.T) {
	f := newScriptFleet(t, 5*time.Second)
	f.pool("a", syncJoin, "g", 10, 8, 1)
	f.pool("b", syncJoin, "g", 10, 1, 1)
	a := f.pool("a", syncRenew, "g", 10, 3, 8)
	if a.target != 8 {
		t.Fatalf("nobody short: got target %d, want 8 (keep)", a.target)
	}
	if a = f.pool("a", syncRenew, "g", 10, 0, 8); a.target != 8 {
		t.Fatalf("a idle, nobody short: got target %d, want 8 (keep)", a.target)
	}
	f.pool("b", syncRenew, "g", 10, 5, 1)
	if a = f.pool("a", syncRenew, "g", 10, 0, 8); a.target != 1 {
		t.Fatalf("a idle, b short: got target %d, want 1", a.target)
	}
	a = f.pool("a", syncRenew, "g", 10, 3, 8)
	if a.target != 3 {
		t.Fatalf("b short: got target %d, want 3 (a's want)", a.target)
	}
	a = f.pool("a", syncRenew, "g", 10, 0, 1)
	if a.share != 1 || a.target != 1 {
		t.Fatalf("a idle: got %+v, want share 1, target 1", a)
	}
}

func TestScriptLeaseExpiresByRedisTimeAndARenewAfterItIsLost(t *testing.T) {
	f := newScriptFleet(t, 300*time.Millisecond)
	f.pool("a", syncJoin, "g", 6, 6, 1)
	if r := f.pool("b", syncJoin, "g", 6, 6, 1); r.members != 2 || r.used != 7 {
		t.Fatalf("both live: got %+v, want 2 members, 7 used", r)
	}
	// a stops renewing; b keeps renewing until Redis drops a's lease.
	eventually(t, 3*time.Second, func() bool {
		r := f.pool("b", syncRenew, "g", 6, 6, 1)
		return r.members == 1 && r.share == 6
	}, "b never took a's share after a's lease expired")
	if r := f.sync("a", syncRenew, "g", 6, 6, 5); !r.lost {
		t.Fatalf("a renews after expiry: got %+v, want lost", r)
	}
}

func TestScriptIdleGroupsLeaveNoKeys(t *testing.T) {
	f := newScriptFleet(t, 300*time.Millisecond)
	ctx := context.Background()
	f.pool("a", syncJoin, "idle", 6, 1, 1)
	f.pool("a", syncRenew, "busy", 6, 4, 1)
	if n := f.c.Exists(ctx, f.opts.groupKey("idle")).Val(); n != 0 {
		t.Fatalf("a group nobody wants more than 1 of: got %d keys, want 0", n)
	}
	if n := f.c.Exists(ctx, f.opts.groupKey("busy")).Val(); n != 1 {
		t.Fatalf("busy group: got %d keys, want 1", n)
	}
	f.pool("a", syncRenew, "busy", 6, 0, 1)
	if n := f.c.Exists(ctx, f.opts.groupKey("busy")).Val(); n != 0 {
		t.Fatalf("busy group gone idle: got %d keys, want 0", n)
	}
	// A replica that dies holding a share: its keys expire with its lease.
	f.pool("a", syncRenew, "busy", 6, 4, 1)
	eventually(t, 3*time.Second, func() bool {
		return f.c.Exists(ctx, f.opts.groupKey("busy"), f.opts.membersKey(), f.opts.bornKey()).Val() == 0
	}, "keys of a dead fleet never expired")
}

func TestScriptFreshStateGrantsNothingDuringGraceButTakesDeclarations(t *testing.T) {
	s := startRedis(t)
	// A lease long enough that a loaded machine renews it in time.
	o, _ := Options{LeaseTTL: time.Second}.withDefaults()
	f := &scriptFleet{t: t, c: s.client(t), opts: o}
	a := f.sync("a", syncJoin, "g", 10, 10, 4)
	if a.grace <= 0 || a.pools[0].share != 4 {
		t.Fatalf("fresh state: got %+v, want grace and share 4 (declared)", a)
	}
	b := f.pool("b", syncJoin, "g", 10, 10, 3)
	if b.share != 3 || b.used != 7 {
		t.Fatalf("second declaration: got %+v, want share 3, used 7", b)
	}
	eventually(t, 5*time.Second, func() bool {
		r := f.sync("a", syncRenew, "g", 10, 10, 4)
		f.pool("b", syncRenew, "g", 10, 10, 3)
		return r.grace == 0 && r.pools[0].share == 5
	}, "a never grew to its fair share after the grace")
}

func TestScriptLeaveGivesBackAtOnceWhenNothingRuns(t *testing.T) {
	f := newScriptFleet(t, 5*time.Second)
	f.pool("a", syncJoin, "g", 10, 8, 1)
	f.pool("b", syncJoin, "g", 10, 8, 1)
	// a leaves with 3 running: it keeps 3 and its lease.
	if r := f.pool("a", syncLeave, "g", 10, 0, 3); r.share != 3 || r.members != 2 {
		t.Fatalf("leave while running: got %+v, want share 3, 2 members", r)
	}
	if r := f.pool("a", syncLeave, "g", 10, 0, 0); r.members != 2 {
		t.Fatalf("leave idle: got %+v", r)
	}
	if r := f.pool("b", syncRenew, "g", 10, 10, 1); r.members != 1 || r.share != 10 {
		t.Fatalf("after a left: got %+v, want b alone with 10", r)
	}
}

// A member that declares more than the limit on joining (its executor ran
// that much before New) is told to shrink to the limit, alone or not, and
// its share comes down to the limit as those tasks end.
func TestScriptTargetOfADeclarationAboveTheLimitIsTheLimit(t *testing.T) {
	f := newScriptFleet(t, 5*time.Second)
	if a := f.pool("a", syncJoin, "g", 4, 4, 6); a.share != 6 || a.target != 4 {
		t.Fatalf("a declares 6 of 4: got %+v, want share 6, target 4", a)
	}
	if a := f.pool("a", syncRenew, "g", 4, 4, 6); a.share != 6 || a.target != 4 {
		t.Fatalf("a still runs 6: got %+v, want share 6, target 4", a)
	}
	if a := f.pool("a", syncRenew, "g", 4, 4, 4); a.share != 4 || a.target != 4 {
		t.Fatalf("a runs 4: got %+v, want share 4, target 4", a)
	}
	if a := f.pool("a", syncRenew, "g", 4, 0, 4); a.share != 4 || a.target != 4 {
		t.Fatalf("a idle: got %+v, want share 4, target 4", a)
	}
	// A renewal that keeps more than Redis counts runs it: Redis lost the
	// writes that counted it. The share counts it, and the target is the
	// limit still.
	if a := f.pool("a", syncRenew, "g", 4, 4, 6); a.share != 6 || a.target != 4 {
		t.Fatalf("a keeps 6 of a share of 4: got %+v, want share 6, target 4", a)
	}
}

// TestScriptCountsTheWantOfEachMemberThatStoresNothing: a member that stores
// nothing holds 1 and wants 1. Wants of 3, 1 and 1 are over a limit of 4,
// so the member that took 3 alone shrinks to its fair share, 2.
func TestScriptCountsTheWantOfEachMemberThatStoresNothing(t *testing.T) {
	f := newScriptFleet(t, 5*time.Second)
	if a := f.pool("a", syncJoin, "g", 4, 3, 1); a.share != 3 {
		t.Fatalf("a alone: got share %d, want 3", a.share)
	}
	f.pool("b", syncJoin, "g", 4, 1, 1)
	f.pool("c", syncJoin, "g", 4, 1, 1)
	a := f.pool("a", syncRenew, "g", 4, 3, 3)
	if a.target != 2 || a.used != 5 || a.members != 3 {
		t.Fatalf("a beside two members storing nothing: got %+v, want target 2, used 5, members 3", a)
	}
}

// TestScriptTheMembersKeyLostAloneStartsAGrace: with every lease gone at
// once, the fleet state is new even though born outlived the members key.
// A member that joins then grows from nothing, whatever was held before.
func TestScriptTheMembersKeyLostAloneStartsAGrace(t *testing.T) {
	f := newScriptFleet(t, 5*time.Second)
	f.pool("a", syncJoin, "g", 10, 5, 1)
	if err := f.c.Del(context.Background(), f.opts.membersKey()).Err(); err != nil {
		t.Fatal(err)
	}
	b := f.sync("b", syncJoin, "g", 10, 10, 1)
	if b.grace <= 0 || b.pools[0].share != 1 {
		t.Fatalf("after the members key was lost: got %+v, want a grace and share 1", b)
	}
}

// TestScriptAMemberGivenItsWantIsNotShort: a member whose share is its want
// is not short, so an idle member keeps what it holds.
func TestScriptAMemberGivenItsWantIsNotShort(t *testing.T) {
	f := newScriptFleet(t, 5*time.Second)
	f.pool("a", syncJoin, "g", 10, 6, 1)
	if b := f.pool("b", syncJoin, "g", 10, 3, 1); b.share != 3 {
		t.Fatalf("b: got share %d, want 3", b.share)
	}
	if a := f.pool("a", syncRenew, "g", 10, 0, 6); a.target != 6 {
		t.Fatalf("a idle, b given its want: got target %d, want 6 (keep)", a.target)
	}
}

// TestScriptTheBornKeyLostAloneStartsAGraceThatEnds: a state that lost its
// born key alone is taken as new, once: its grace ends a TTL later.
func TestScriptTheBornKeyLostAloneStartsAGraceThatEnds(t *testing.T) {
	f := newScriptFleet(t, 400*time.Millisecond)
	f.pool("a", syncJoin, "g", 10, 5, 1)
	if err := f.c.Del(context.Background(), f.opts.bornKey()).Err(); err != nil {
		t.Fatal(err)
	}
	if r := f.sync("a", syncRenew, "g", 10, 5, 5); r.grace <= 0 {
		t.Fatalf("after the born key was lost: got %+v, want a grace", r)
	}
	eventually(t, 3*time.Second, func() bool { return f.sync("a", syncRenew, "g", 10, 5, 5).grace == 0 },
		"the grace never ended")
}

// TestScriptALeaveKeepsTheLeaseWhileAnyPoolRuns: a member leaving with
// tasks running in its second pool only keeps its lease, as with one pool.
func TestScriptALeaveKeepsTheLeaseWhileAnyPoolRuns(t *testing.T) {
	f := newScriptFleet(t, 5*time.Second)
	pools := func(keep1, keep2 int) []poolRequest {
		return []poolRequest{
			{key: f.opts.groupKey("g1"), limit: 10, want: 0, keep: keep1},
			{key: f.opts.groupKey("g2"), limit: 10, want: 0, keep: keep2},
		}
	}
	ctx := context.Background()
	for i, mode := range []string{syncJoin, syncLeave} {
		if _, err := runSync(ctx, f.c, &f.opts, "a", mode, uint64(i+1), pools(0, 3)); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.c.ZCard(ctx, f.opts.membersKey()).Val(); n != 1 {
		t.Fatalf("a left with 3 running in g2: %d members, want a's lease kept", n)
	}
	if _, err := runSync(ctx, f.c, &f.opts, "a", syncLeave, 3, pools(0, 0)); err != nil {
		t.Fatal(err)
	}
	if n := f.c.ZCard(ctx, f.opts.membersKey()).Val(); n != 0 {
		t.Fatalf("a left running nothing: %d members, want none", n)
	}
}

// TestScriptADeadMembersShareIsDroppedFromThePool: the sync that finds a
// member's lease expired drops its share and want from the pool, so the
// pool keeps no field of a member that is gone.
func TestScriptADeadMembersShareIsDroppedFromThePool(t *testing.T) {
	f := newScriptFleet(t, 300*time.Millisecond)
	ctx := context.Background()
	ofB := func() []string {
		fields, err := f.c.HKeys(ctx, f.opts.groupKey("g")).Result()
		if err != nil {
			t.Fatal(err)
		}
		return slices.DeleteFunc(fields, func(k string) bool { return !strings.HasSuffix(k, ":b") })
	}
	f.pool("a", syncJoin, "g", 10, 4, 1)
	f.pool("b", syncJoin, "g", 10, 5, 1)
	if len(ofB()) != 2 {
		t.Fatalf("b holding more than 1: fields %v, want its share and want", ofB())
	}
	eventually(t, 3*time.Second, func() bool { return f.pool("a", syncRenew, "g", 10, 4, 4).members == 1 },
		"b's lease never expired")
	if fields := ofB(); len(fields) > 0 {
		t.Errorf("after b's lease expired: the pool keeps %v, want no field of b", fields)
	}
}
