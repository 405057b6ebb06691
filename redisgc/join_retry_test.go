package redisgc

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// lostJoinReply runs every sync on Redis, but answers the first join with an
// error, as a link that breaks after Redis ran it would.
type lostJoinReply struct {
	*redis.Client
	lost   atomic.Bool
	onLost func() // if set, called as the reply is lost
}

func (l *lostJoinReply) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return l.lose(l.Client.EvalSha(ctx, sha, keys, args...), args)
}

func (l *lostJoinReply) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	return l.lose(l.Client.Eval(ctx, src, keys, args...), args)
}

func (l *lostJoinReply) lose(cmd *redis.Cmd, args []any) *redis.Cmd {
	if cmd.Err() != nil || args[2] != syncJoin || l.lost.Swap(true) {
		return cmd
	}
	if l.onLost != nil {
		l.onLost()
	}
	return redis.NewCmdResult(nil, errors.New("read: connection reset by peer"))
}

// A join that reached Redis but whose reply was lost is sent again. Redis
// then counts the replica once: as one member, holding 1 of each limit
// without asking, and declaring what it runs once. Counted twice, for a
// lease, it held the others' shares down by 1 of every limit, and by what
// it runs of those it declared.
func TestARetriedJoinCountsTheReplicaOnce(t *testing.T) {
	s := startRedis(t)
	o := testOptions(12)
	o.Name = "b"
	lying := &lostJoinReply{Client: s.client(t)}
	b := &replica{exec: newFakeExec(), errc: make(chan error, 1)}
	b.exec.set("t", 3, 3) // 3 tasks run from before the join
	c, err := newCoordinator(lying, b.exec, o)
	if err != nil {
		t.Fatal(err)
	}
	b.c = c
	go func() { b.errc <- c.Run(context.Background()) }()
	t.Cleanup(func() { b.close(t) })
	eventually(t, 5*time.Second, func() bool { return b.c.Status().Mode == ModeConnected }, "b never joined")
	if !lying.lost.Load() {
		t.Fatal("no join reply was lost")
	}

	d := o.withDefaultsOrDie(t)
	admin := s.client(t)
	members, err := admin.ZRange(context.Background(), d.membersKey(), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 1 || members[0] != b.c.Status().Member {
		t.Errorf("members %q, want b's one member %q", members, b.c.Status().Member)
	}
	h, err := admin.HGetAll(context.Background(), d.groupKey("t")).Result()
	if err != nil {
		t.Fatal(err)
	}
	declared := 0
	for f := range h {
		if strings.HasPrefix(f, "s:") {
			declared++
		}
	}
	if declared != 1 {
		t.Errorf("the group's hash %v holds %d shares, want b's one", h, declared)
	}
}

// inFlight is a fakeExec whose total a test sets.
type inFlight struct {
	*fakeExec
	n atomic.Int64 // tasks in flight
}

func (f *inFlight) total() load { return load{running: int(f.n.Load())} }

// The global pool is sent again by a retried join too. Here the first join
// declared 3 tasks in flight, from before the join, of a GlobalLimit of 1,
// and they ended before the retry. Not sent again, that declaration stayed
// in Redis while the replica lived, and held the others to nothing.
func TestARetriedJoinReplacesWhatTheFirstDeclaredOfTheGlobalLimit(t *testing.T) {
	s := startRedis(t)
	o := testOptions(12)
	o.Name, o.GlobalLimit = "b", 1
	target := &inFlight{fakeExec: newFakeExec()}
	target.n.Store(3)
	lying := &lostJoinReply{Client: s.client(t), onLost: func() { target.n.Store(0) }}
	c, err := newCoordinator(lying, target, o)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Run(context.Background()) }()
	t.Cleanup(func() {
		_ = c.Close()
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Errorf("Run after Close: got %v, want ErrClosed", err)
		}
	})
	eventually(t, 5*time.Second, func() bool { return c.Status().Mode == ModeConnected }, "b never joined")
	if !lying.lost.Load() {
		t.Fatal("no join reply was lost")
	}
	d := o.withDefaultsOrDie(t)
	h, err := s.client(t).HGetAll(context.Background(), d.globalKey()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(h) > 0 {
		t.Errorf("the global pool holds %v, want nothing: b runs nothing", h)
	}
}

// On a link slower than the bound on a call, each join is given up before
// its reply, though it reaches Redis, and the replica joins again. Each
// join under a new ID added a member for a lease, declaring what the
// replica runs: three at once here, holding the others' shares down. Under
// one ID, Redis counts the replica once.
func TestJoinsGivenUpOnASlowLinkCountTheReplicaOnce(t *testing.T) {
	s := startRedis(t)
	p := newFaultProxy(t, s.addr())
	t.Cleanup(p.restore)
	o := testOptions(12)
	o.LeaseTTL, o.RenewInterval = 300*time.Millisecond, 60*time.Millisecond
	// Redis has the script: a call is one round trip, not two.
	if err := syncScript.Load(context.Background(), s.client(t)).Err(); err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(&redis.Options{Addr: p.addr()})
	t.Cleanup(func() { _ = client.Close() })
	if err := client.Ping(context.Background()).Err(); err != nil { // connected before the link slows
		t.Fatal(err)
	}
	p.slow(o.RenewInterval * 2 / 3) // a call takes 4/3 of its bound
	r := startReplica(t, client, o)
	r.exec.set("t", 20, 0)
	d := o.withDefaultsOrDie(t)
	admin := s.client(t)
	members := func() int64 {
		n, err := admin.ZCard(context.Background(), d.membersKey()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	eventually(t, 5*time.Second, func() bool { return members() > 0 }, "the replica's joins never reached Redis")
	// For a lease and a half, as joins go on.
	for end := time.Now().Add(o.LeaseTTL * 3 / 2); time.Now().Before(end); {
		if n := members(); n > 1 {
			t.Fatalf("%d members of one replica, want 1", n)
		}
	}
	if st := r.c.Status(); st.Mode == ModeConnected {
		t.Errorf("on a link slower than its bound: mode %v, want no join confirmed", st.Mode)
	}
}

// downAfterJoin runs the first join on Redis but answers it with an error,
// then fails every other join without running it, as a link that broke
// after the first join reached Redis. A leave runs.
type downAfterJoin struct {
	*redis.Client
	ran   atomic.Bool  // the first join has run
	joins atomic.Int32 // joins failed
}

func (d *downAfterJoin) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return d.run(args, func() *redis.Cmd { return d.Client.EvalSha(ctx, sha, keys, args...) })
}

func (d *downAfterJoin) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	return d.run(args, func() *redis.Cmd { return d.Client.Eval(ctx, src, keys, args...) })
}

func (d *downAfterJoin) run(args []any, call func() *redis.Cmd) *redis.Cmd {
	if args[2] != syncJoin {
		return call()
	}
	if !d.ran.Load() {
		cmd := call()
		if cmd.Err() != nil { // NOSCRIPT, then the same join by EVAL
			return cmd
		}
		d.ran.Store(true)
	}
	d.joins.Add(1)
	return redis.NewCmdResult(nil, errors.New("read: connection reset by peer"))
}

// A replica closed while no join of it has been confirmed leaves for the
// member its joins named, though none is in flight: one may have reached
// Redis, which would count it for a lease.
func TestCloseLeavesForAJoinWhoseReplyWasLost(t *testing.T) {
	s := startRedis(t)
	o := testOptions(12)
	o.LeaseTTL, o.RenewInterval = 5*time.Second, time.Second // the first join's lease outlives the test
	client := &downAfterJoin{Client: s.client(t)}
	r := startReplica(t, client, o)
	eventually(t, 5*time.Second, func() bool { return client.joins.Load() >= 3 }, "the replica never retried its join")
	d := o.withDefaultsOrDie(t)
	admin := s.client(t)
	if n := admin.ZCard(context.Background(), d.membersKey()).Val(); n != 1 {
		t.Fatalf("before Close: %d members, want the first join's", n)
	}
	r.close(t)
	if n := admin.ZCard(context.Background(), d.membersKey()).Val(); n != 0 {
		t.Errorf("after Close: %d members, want none", n)
	}
}
