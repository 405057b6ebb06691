package redisgc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// signalled is a real client that tells the mode of each sync it sends.
type signalled struct {
	*redis.Client
	sent chan string
}

func (s signalled) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	select {
	case s.sent <- args[2].(string):
	default:
	}
	return s.Client.EvalSha(ctx, sha, keys, args...)
}

// A replica closed while its join is on its way back leaves Redis no
// member of its own. Redis has run the join, so the leave goes for that
// member. It used to stay counted, with all it wanted, for a lease, and
// held the other replicas to a share with it.
func TestACloseDuringTheJoinLeavesNoMemberBehind(t *testing.T) {
	s := startRedis(t)
	p := newFaultProxy(t, s.addr())
	p.slow(100 * time.Millisecond) // the join's reply is on its way for a while
	client := redis.NewClient(&redis.Options{Addr: p.addr(), ReadTimeout: 2 * time.Second})
	t.Cleanup(func() { _ = client.Close() })
	sig := signalled{Client: client, sent: make(chan string, 1)}

	o := testOptions(12)
	o.LeaseTTL, o.RenewInterval = 3*time.Second, time.Second
	o.Name = "a"
	exec := newFakeExec()
	exec.set("t", 20, 0)
	c, err := newCoordinator(sig, exec, o)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Run(context.Background()) }()
	if m := <-sig.sent; m != syncJoin {
		t.Fatalf("the first sync is a %s, want a join", m)
	}
	admin := s.client(t)
	ctx := context.Background()
	members := func() []string {
		ms, _ := admin.ZRange(ctx, "{groupconc}:members", 0, -1).Result()
		var ours []string
		for _, m := range ms {
			if strings.HasPrefix(m, "a/") {
				ours = append(ours, m)
			}
		}
		return ours
	}
	eventually(t, 5*time.Second, func() bool { return len(members()) > 0 }, "the join never reached Redis")
	exec.set("t", 0, 0) // it runs nothing: Close gives back all
	_ = c.Close()
	<-errc
	if ms := members(); len(ms) != 0 {
		t.Errorf("Redis still counts %v after Close returned", ms)
	}
}
