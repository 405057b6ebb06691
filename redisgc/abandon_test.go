package redisgc

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kobe/groupconc"
	"github.com/redis/go-redis/v9"
)

// callsInFlight counts the goroutines running a sync.
func callsInFlight() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "redisgc.runSync(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestCloseWaitsForTheCallItGaveUpOn: a call a frozen link holds is given
// up at the lease's deadline, and its goroutine ends at the client's read
// timeout; Close returns only then, and leaves no call running.
func TestCloseWaitsForTheCallItGaveUpOn(t *testing.T) {
	s := startRedis(t)
	p := newFaultProxy(t, s.addr())
	const readTimeout = 500 * time.Millisecond
	client := redis.NewClient(&redis.Options{Addr: p.addr(), ReadTimeout: readTimeout})
	t.Cleanup(func() { _ = client.Close() })
	o := testOptions(12)
	r := startReplica(t, client, o)
	t.Cleanup(p.restore)
	r.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return r.exec.limit("t") == 12 }, "r never took 12")

	p.freeze()
	eventually(t, 5*time.Second, func() bool { return r.c.Status().Mode == ModeFallback }, "r never fell back")
	eventually(t, 5*time.Second, func() bool { return callsInFlight() > 0 }, "no call hangs on the frozen link")
	start := time.Now()
	r.close(t)
	if took := time.Since(start); took > readTimeout+o.RenewInterval+time.Second {
		t.Errorf("Close took %v, want within the client's read timeout %v", took, readTimeout)
	}
	if n := callsInFlight(); n > 0 {
		t.Errorf("after Close: %d calls still run, want none", n)
	}
}

// TestACallWithNoReplyByItsBoundIsGivenUp: a renewal that a frozen link
// holds past its bound is given up there, while the lease is still live.
// The replica then holds, saying why, and does not wait for the client's
// own timeout or for the fallback.
func TestACallWithNoReplyByItsBoundIsGivenUp(t *testing.T) {
	s := startRedis(t)
	p := newFaultProxy(t, s.addr())
	client := redis.NewClient(&redis.Options{Addr: p.addr(), ReadTimeout: time.Minute, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	o := testOptions(12)
	o.LeaseTTL = 2 * time.Second // a bound (RenewInterval) well before the fallback
	r := startReplica(t, client, o)
	t.Cleanup(p.restore)
	r.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return r.exec.limit("t") == 12 }, "r never took 12")

	p.freeze()
	eventually(t, 5*time.Second, func() bool {
		st := r.c.Status()
		return st.Mode == ModeHolding && st.Err != nil && strings.Contains(st.Err.Error(), "no reply within 150ms")
	}, "the frozen call was never given up at its bound")
	if got := r.exec.limit("t"); got != 12 {
		t.Errorf("holding: limit %d, want the 12 held", got)
	}
}

// scripted answers each sync by its mode (join, renew or leave), with the
// reply that next returns for its pools.
type scripted struct {
	redis.Scripter // nil: a sync calls only EvalSha, and Eval after NOSCRIPT
	next           func(mode string, pools int) *redis.Cmd
}

func (s scripted) EvalSha(_ context.Context, _ string, keys []string, args ...any) *redis.Cmd {
	return s.next(args[2].(string), len(keys)-4)
}

func (s scripted) Eval(ctx context.Context, _ string, keys []string, args ...any) *redis.Cmd {
	return s.EvalSha(ctx, "", keys, args...)
}

// TestAReplyAfterTheFallbackIsIgnored: a renewal whose reply comes only
// after the replica fell back is ignored, whatever it says. The replica
// joins again as a new member. In fake time, so the renewal is sent within
// the lease however busy the machine is.
func TestAReplyAfterTheFallbackIsIgnored(t *testing.T) {
	synctest.Test(t, replyAfterTheFallback)
}

func replyAfterTheFallback(t *testing.T) {
	modes, release := make(chan string, 16), make(chan struct{})
	var calls atomic.Int32
	client := scripted{next: func(mode string, pools int) *redis.Cmd {
		select {
		case modes <- mode:
		default: // the test has what it needs
		}
		if calls.Add(1) == 2 {
			<-release // the first renewal
		}
		vals := []any{"ok", int64(0)}
		for range pools {
			vals = append(vals, int64(4), int64(4), int64(4), int64(1))
		}
		return redis.NewCmdResult(vals, nil)
	}}
	exec := groupconc.New(nil)
	gate := make(chan struct{})
	t.Cleanup(func() {
		close(gate)
		_ = exec.Shutdown(context.Background())
	})
	submitGated(t, exec, "t", 4, gate)
	c, err := New(client, exec, Options{Limits: map[string]int{"t": 4}, LeaseTTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Run(context.Background()) }()
	t.Cleanup(func() {
		_ = c.Close()
		<-errc
	})
	letGo := sync.OnceFunc(func() { close(release) })
	t.Cleanup(letGo) // first: Close waits for the held call
	if m := <-modes; m != syncJoin {
		t.Fatalf("first call: %s, want join", m)
	}
	if m := <-modes; m != syncRenew {
		t.Fatalf("second call: %s, want a renewal", m)
	}
	eventually(t, 5*time.Second, func() bool { return c.Status().Mode == ModeFallback }, "never fell back")
	letGo()
	if m := <-modes; m != syncJoin {
		t.Errorf("after the late reply: %s, want a join (status %+v)", m, c.Status())
	}
}

// TestAReplicaThatGetsErrorsRetriesEverySyncInterval: a replica whose
// calls fail holds, and tries again a SyncInterval later, not at once. In
// fake time, so the count is exact.
func TestAReplicaThatGetsErrorsRetriesEverySyncInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		ok := replying(4, 4, 4, 1)
		client := fakeScripter{reply: func(ctx context.Context, keys []string) *redis.Cmd {
			n := calls.Add(1)
			if n > 100 { // retrying at once: let fake time go on, for the count to fail
				<-ctx.Done()
			}
			if n > 1 {
				return redis.NewCmdResult(nil, errors.New("ERR the server is broken"))
			}
			return ok.reply(ctx, keys)
		}}
		o := testOptions(12)
		o.LeaseTTL, o.RenewInterval = 10*time.Second, time.Second // holds throughout
		r := startReplica(t, client, o)
		r.exec.set("t", 20, 0)
		eventually(t, 5*time.Second, func() bool { return r.c.Status().Mode == ModeHolding }, "never held")
		if n, before := callsOver(10*o.SyncInterval, &calls); n != 10 {
			t.Errorf("holding for 10 SyncIntervals: %d calls (%d before), want 10, one a SyncInterval", n, before)
		}
	})
}
