package redisgc

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/redis/go-redis/v9"
)

// submitGated submits n tasks of group g to exec, each running until gate
// is closed.
func submitGated(t *testing.T, exec *groupconc.GroupExecutor, g string, n int, gate <-chan struct{}) {
	t.Helper()
	for range n {
		_, err := groupconc.Submit(context.Background(), exec, g, "x", func(context.Context) (struct{}, error) {
			<-gate
			return struct{}{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestShuttingTheExecutorDownFirstGivesEverythingBack: Run notices the
// shutdown while the executor's tasks still run, and leaves keeping them.
// It used to return then, so Redis counted them until the lease expired.
// Now it waits for them to end and gives them back too: once Shutdown and
// Run have returned, Redis holds nothing of the replica. Under a global
// limit it waits for the tasks of every group, coordinated or not; without
// one, not for a task of a group the fleet does not count.
func TestShuttingTheExecutorDownFirstGivesEverythingBack(t *testing.T) {
	for _, tc := range []struct {
		name, key string // key: the pool's hash in Redis
		global    bool
	}{
		{"group", "{groupconc}:g:t", false},
		{"global", "{groupconc}:global", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startRedis(t)
			admin := s.client(t)
			opts := fleetOpts(map[string]int{"t": 6})
			limit := func(r *execReplica) int { return r.limit("t") }
			if tc.global {
				opts = fleetOpts(nil) // t is not coordinated: its tasks count in the global limit only
				opts.GlobalLimit = 6
				limit = func(r *execReplica) int { return r.coord.Status().Global.Limit }
			}
			opts.LeaseTTL, opts.RenewInterval = 2*time.Second, 600*time.Millisecond // outlives the checks
			b := startExecReplica(t, s, "b", opts)
			gateB := make(chan struct{})
			t.Cleanup(func() { close(gateB) }) // before b's executor shuts down
			submitGated(t, b.exec, "t", 3, gateB)

			exec := groupconc.New(nil)
			opts.Name = "a"
			c, err := New(s.client(t), exec, opts)
			if err != nil {
				t.Fatal(err)
			}
			gateA, gateFree := make(chan struct{}), make(chan struct{})
			releaseA, releaseFree := sync.OnceFunc(func() { close(gateA) }), sync.OnceFunc(func() { close(gateFree) })
			t.Cleanup(func() { _ = exec.Shutdown(context.Background()) })
			t.Cleanup(func() { _ = c.Close() })
			t.Cleanup(func() { releaseA(); releaseFree() }) // first, on a failure too
			errc := make(chan error, 1)
			go func() { errc <- c.Run(context.Background()) }()
			submitGated(t, exec, "t", 3, gateA)
			if !tc.global {
				submitGated(t, exec, "free", 1, gateFree) // uncoordinated: runs on as Run leaves
			}
			a := &execReplica{exec: exec, coord: c}
			eventually(t, 10*time.Second, func() bool { return limit(a) == 3 && limit(b) == 3 },
				"never split 3/3: a %d, b %d", limit(a), limit(b))
			member := c.Status().Member
			if !strings.HasPrefix(member, "a/") {
				t.Fatalf("a's member ID %q, want it to start with its Name", member) // else the checks below prove nothing
			}

			shut := make(chan error, 1)
			go func() { shut <- exec.Shutdown(context.Background()) }()
			eventually(t, 10*time.Second, func() bool { m := c.Status().Mode; return m == ModeFallback || m == ModeStopped },
				"Run never noticed the shutdown: %+v", c.Status())
			// The leave keeps the 3 tasks running, and wants 1 as every member.
			eventually(t, 10*time.Second, func() bool { return admin.HGet(context.Background(), tc.key, "w:"+member).Val() == "1" },
				"a never left keeping its running tasks")
			releaseA()
			select {
			case err := <-errc:
				if !errors.Is(err, groupconc.ErrClosed) {
					t.Errorf("Run: got %v, want the executor's ErrClosed", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("Run did not return after its executor shut down: %+v", c.Status())
			}
			_ = c.Close()

			ctx := context.Background()
			members, err := admin.ZRange(ctx, "{groupconc}:members", 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range members {
				if strings.HasPrefix(m, "a/") {
					t.Errorf("after Run returned: lease %s still in Redis, want none of a", m)
				}
			}
			h, err := admin.HGetAll(ctx, tc.key).Result()
			if err != nil {
				t.Fatal(err)
			}
			for f, v := range h {
				if strings.Contains(f, ":a/") {
					t.Errorf("after Run returned: Redis counts %s = %s, want nothing of a", f, v)
				}
			}
			releaseFree()
			if err := <-shut; err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		})
	}
}

// TestCloseOfARunningExecutorDoesNotWaitForItsTasks: an executor that is
// not shut down goes on running its tasks, so Close leaves them counted
// under the lease and returns within a RenewInterval, never waiting for
// them until the lease's deadline.
func TestCloseOfARunningExecutorDoesNotWaitForItsTasks(t *testing.T) {
	s := startRedis(t)
	o := testOptions(12)
	o.LeaseTTL, o.RenewInterval = 6*time.Second, 300*time.Millisecond
	r := startReplica(t, s.client(t), o)
	r.exec.set("t", 20, 0) // a new fleet's grace outlives the test: r runs 1
	eventually(t, 5*time.Second, func() bool { return r.c.Status().Mode == ModeConnected }, "r never joined")
	start := time.Now()
	r.close(t)
	if took := time.Since(start); took > o.RenewInterval+time.Second {
		t.Errorf("Close took %v with tasks running, want within a RenewInterval (%v)", took, o.RenewInterval)
	}
}

// TestEveryCloseReturnsOnlyOnceRunHasReturned: a second Close, concurrent
// with a first one that waits for Run, used to return at once, and to let
// the executor take overrides while Run still ran. Run here waits for a
// call that a client ignoring its context holds until its own timeout.
func TestEveryCloseReturnsOnlyOnceRunHasReturned(t *testing.T) {
	called, release := make(chan struct{}, 1), make(chan struct{})
	var ended atomic.Bool // the held call has returned
	client := fakeScripter{reply: func(context.Context, []string) *redis.Cmd {
		select {
		case called <- struct{}{}:
		default:
		}
		<-release
		ended.Store(true)
		return redis.NewCmdResult(nil, errors.New("i/o timeout"))
	}}
	exec := groupconc.New(nil)
	gate := make(chan struct{}) // a task keeps group t known
	t.Cleanup(func() {
		close(gate)
		_ = exec.Shutdown(context.Background())
	})
	submitGated(t, exec, "t", 1, gate)
	c, err := New(client, exec, Options{Limits: map[string]int{"t": 4}, LeaseTTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	var once sync.Once
	c.onPublish = func(s Status) {
		if s.Mode == ModeStopped {
			once.Do(func() { close(stopped) })
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- c.Run(context.Background()) }()
	<-called

	first := make(chan struct{})
	go func() { _ = c.Close(); close(first) }()
	<-stopped // Run has left, and waits for the held call
	override := groupconc.GroupOverride{MaxConcurrency: intp(3)}
	if err := exec.SetGroupOverride("t", override); !errors.Is(err, ErrCoordinated) {
		t.Errorf("while Run still runs: override got %v, want ErrCoordinated", err)
	}
	// The client gives up on the call later, as at its read timeout. A
	// second Close that does not wait for Run returns well before.
	time.AfterFunc(300*time.Millisecond, func() { close(release) })
	_ = c.Close()
	if !ended.Load() {
		t.Errorf("a second Close returned while Run still waited for its call")
	}
	if err := exec.SetGroupOverride("t", override); err != nil {
		t.Errorf("after Close: override got %v, want it taken", err)
	}
	<-first
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: got %v, want ErrClosed", err)
	}
}

// TestRunWaitsForAShutDownExecutorNoLongerThanTheLease: Run waits for the
// tasks of an executor being shut down no longer than its lease may live,
// and returns while a task still runs past it.
func TestRunWaitsForAShutDownExecutorNoLongerThanTheLease(t *testing.T) {
	s := startRedis(t)
	exec := groupconc.New(nil)
	opts := fleetOpts(map[string]int{"t": 4})
	c, err := New(s.client(t), exec, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	gate := make(chan struct{})
	t.Cleanup(func() { // first: Run may wait for the task
		close(gate)
		_ = exec.Shutdown(context.Background()) // waits for the one below too
	})
	submitGated(t, exec, "t", 1, gate)
	errc := make(chan error, 1)
	go func() { errc <- c.Run(context.Background()) }()
	eventually(t, 5*time.Second, func() bool { return c.Status().Mode == ModeConnected }, "never joined")
	go func() { _ = exec.Shutdown(context.Background()) }()
	select {
	case err := <-errc:
		if !errors.Is(err, groupconc.ErrClosed) {
			t.Errorf("Run: got %v, want the executor's ErrClosed", err)
		}
	case <-time.After(opts.LeaseTTL + 2*time.Second):
		t.Fatalf("Run still waits %v after the shutdown, with the lease %v", opts.LeaseTTL+2*time.Second, opts.LeaseTTL)
	}
}
