package redisgc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kobe/groupconc"
	"github.com/redis/go-redis/v9"
)

// gauge counts the tasks the whole fleet runs: each task adds itself as its
// work starts and takes itself out as it ends, so the count is right at
// every instant, and the most it reached is kept.
type gauge struct {
	cur, most atomic.Int64
}

func (g *gauge) enter() {
	n := g.cur.Add(1)
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
}

func (g *gauge) exit() { g.cur.Add(-1) }

// peak returns the most tasks run at once since the last peak, and starts
// the next window from what runs now.
func (g *gauge) peak() int { return int(g.most.Swap(g.cur.Load())) }

// liveFleet is a fleet of in-process replicas on group "t", each with its
// own groupconc executor, Redis client and Coordinator, all kept busy.
type liveFleet struct {
	t     *testing.T
	opts  Options
	work  time.Duration // each task's work
	gauge gauge

	mu      sync.Mutex
	changed chan struct{} // guarded by mu: closed and replaced when a replica publishes
}

// liveReplica is one replica of a liveFleet.
type liveReplica struct {
	name  string
	f     *liveFleet
	exec  *groupconc.GroupExecutor
	coord *Coordinator

	mu       sync.Mutex
	st       Status    // guarded by mu: as last published
	syncs    int       // guarded by mu: successful syncs seen
	fellBack time.Time // guarded by mu: when it last fell back
	leaseEnd time.Time // guarded by mu: when the lease it dropped then could end in Redis

	stopFeed       func()        // stops feed
	fed            chan struct{} // closed when feed has returned
	submitted, ran atomic.Int64  // tasks submitted, and tasks whose work has ended
}

func newLiveFleet(t *testing.T, limit, expected int) *liveFleet {
	if testing.Short() {
		t.Skip("runs three replicas through faults")
	}
	return &liveFleet{
		t: t, work: 10 * time.Millisecond, changed: make(chan struct{}),
		opts: Options{
			Limits:           map[string]int{"t": limit},
			ExpectedReplicas: expected,
			LeaseTTL:         time.Second,
			RenewInterval:    300 * time.Millisecond,
			SyncInterval:     20 * time.Millisecond,
		},
	}
}

// add starts a replica whose client reaches Redis at addr, built as the
// README shows: no timeout of its own is set.
func (f *liveFleet) add(name, addr string) *liveReplica {
	return f.addWith(name, &redis.Options{Addr: addr})
}

// addWith is add with a client built from o.
func (f *liveFleet) addWith(name string, o *redis.Options) *liveReplica {
	client := redis.NewClient(o)
	f.t.Cleanup(func() { _ = client.Close() })
	return f.addClient(name, client)
}

// addClient starts a replica on client. The caller closes the client in a
// cleanup registered before, so that the replica has stopped by then.
func (f *liveFleet) addClient(name string, client redis.Scripter) *liveReplica {
	t := f.t
	r := &liveReplica{name: name, f: f, exec: groupconc.New(nil), fed: make(chan struct{})}
	c, err := New(client, r.exec, f.opts)
	if err != nil {
		t.Fatal(err)
	}
	r.coord = c
	c.onPublish = r.observe
	ctx, stop := context.WithCancel(context.Background())
	r.stopFeed = stop
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	wg.Go(func() { errc <- c.Run(context.Background()) })
	wg.Go(func() { defer close(r.fed); r.feed(ctx) })
	t.Cleanup(func() {
		stop()
		_ = c.Close()
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Errorf("%s: Run after Close: got %v, want ErrClosed", name, err)
		}
		wg.Wait()
		_ = r.exec.Shutdown(context.Background())
	})
	return r
}

// observe records a published status and wakes the fleet's waiters.
func (r *liveReplica) observe(st Status) {
	r.mu.Lock()
	if st.Mode == ModeFallback && r.st.Mode != ModeFallback {
		r.fellBack, r.leaseEnd = time.Now(), r.st.LastSync.Add(r.f.opts.LeaseTTL)
	}
	if st.LastSync.After(r.st.LastSync) {
		r.syncs++
	}
	r.st = st
	r.mu.Unlock()
	f := r.f
	f.mu.Lock()
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

// feed keeps twice the fleet limit of tasks submitted until ctx ends.
func (r *liveReplica) feed(ctx context.Context) {
	slots := make(chan struct{}, 2*r.f.opts.Limits["t"])
	for {
		select {
		case <-ctx.Done():
			return
		case slots <- struct{}{}:
		}
		r.submitted.Add(1)
		_, err := groupconc.Submit(context.Background(), r.exec, "t", "x", func(tctx context.Context) (struct{}, error) {
			defer func() { <-slots }()
			defer r.ran.Add(1)
			r.f.gauge.enter()
			defer r.f.gauge.exit()
			select { // the task's work
			case <-time.After(r.f.work):
			case <-tctx.Done():
			}
			return struct{}{}, nil
		})
		if err != nil {
			<-slots
			r.submitted.Add(-1)
			r.f.t.Errorf("%s: submit: %v", r.name, err)
			return
		}
	}
}

// status returns r's last published status, and how many syncs it has had.
func (r *liveReplica) status() (Status, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st, r.syncs
}

// limit returns the limit r's executor applies to "t".
func (r *liveReplica) limit() int {
	st, _ := r.status()
	for _, s := range st.Groups {
		if s.Group == "t" {
			return s.Limit
		}
	}
	return 1
}

func (r *liveReplica) mode() Mode {
	st, _ := r.status()
	return st.Mode
}

// await waits until cond holds, checking it each time a replica publishes,
// and fails the test after d.
func (f *liveFleet) await(d time.Duration, what string, cond func() bool) {
	f.t.Helper()
	timeout := time.NewTimer(d)
	defer timeout.Stop()
	for {
		f.mu.Lock()
		changed := f.changed
		f.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			f.t.Fatalf("after %v: %s", d, what)
		}
	}
}

// syncsOf waits for n more successful syncs of r: time for shares to move
// and for tasks to run under them.
func (f *liveFleet) syncsOf(r *liveReplica, n int) {
	f.t.Helper()
	_, from := r.status()
	f.await(10*time.Second, r.name+" stopped syncing", func() bool { _, k := r.status(); return k >= from+n })
}

// split waits until every replica is connected with the limit each, and
// then for a few more syncs of the first, so that tasks run under them.
func (f *liveFleet) split(d time.Duration, each int, rs ...*liveReplica) {
	f.t.Helper()
	f.await(d, "the replicas never split the limit evenly", func() bool {
		for _, r := range rs {
			if r.mode() != ModeConnected || r.limit() != each {
				return false
			}
		}
		return true
	})
	f.syncsOf(rs[0], 5)
}

// checkPeak fails the test if the fleet ran more than bound tasks at once
// since the last check.
func (f *liveFleet) checkPeak(bound int, while string) {
	f.t.Helper()
	if got := f.gauge.peak(); got > bound {
		f.t.Errorf("%s the fleet ran %d tasks at once, above its bound %d", while, got, bound)
	} else {
		f.t.Logf("%s the fleet ran at most %d tasks at once (bound %d)", while, got, bound)
	}
}

// checkFellBackInTime fails the test unless r fell back before the lease
// it dropped could end in Redis.
func (r *liveReplica) checkFellBackInTime() {
	r.f.t.Helper()
	r.mu.Lock()
	at, end := r.fellBack, r.leaseEnd
	r.mu.Unlock()
	if at.IsZero() || !at.Before(end) {
		r.f.t.Errorf("%s fell back %v after its lease could end, want before", r.name, at.Sub(end))
	} else {
		r.f.t.Logf("%s fell back %v before its lease could end", r.name, end.Sub(at))
	}
}

// drain stops feeding rs, and fails the test unless every task they were
// given runs to its end within d: none is lost, none hangs.
func (f *liveFleet) drain(d time.Duration, rs ...*liveReplica) {
	f.t.Helper()
	for _, r := range rs {
		r.stopFeed()
		<-r.fed
	}
	eventually(f.t, d, func() bool {
		for _, r := range rs {
			if r.ran.Load() != r.submitted.Load() {
				return false
			}
		}
		return true
	}, "tasks were lost or hung: %v", tally(rs))
	f.t.Logf("every task ran: %v", tally(rs))
}

// tally prints, per replica, the tasks submitted and those that ran.
type tally []*liveReplica

func (rs tally) String() string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s ran %d of %d", r.name, r.ran.Load(), r.submitted.Load())
	}
	return b.String()
}
