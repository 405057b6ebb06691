package redisgc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kobe/groupconc"
)

// execReplica is one in-process replica of the tests below: a groupconc
// executor and its Coordinator, running until the test ends.
type execReplica struct {
	exec  *groupconc.GroupExecutor
	coord *Coordinator
}

// startExecReplica starts a replica coordinated through s with opts.
func startExecReplica(t *testing.T, s *redisServer, name string, opts Options) *execReplica {
	t.Helper()
	return startReplicaOn(t, s.client(t), name, opts)
}

// startReplicaOn starts a replica coordinated through the client c.
func startReplicaOn(t *testing.T, c redis.Scripter, name string, opts Options) *execReplica {
	t.Helper()
	opts.Name = name
	var p *groupconc.GroupPolicy // the default, or Base's: an executor keeps its mode
	if opts.Base != nil {
		var err error
		if p, err = opts.Base().Build(); err != nil {
			t.Fatal(err)
		}
	}
	r := &execReplica{exec: groupconc.New(p)}
	coord, err := New(c, r.exec, opts)
	if err != nil {
		t.Fatal(err)
	}
	r.coord = coord
	errc := make(chan error, 1)
	go func() { errc <- coord.Run(context.Background()) }()
	t.Cleanup(func() {
		_ = coord.Close()
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Errorf("%s: Run after Close: got %v, want ErrClosed", name, err)
		}
		_ = r.exec.Shutdown(context.Background())
	})
	return r
}

// limit returns the limit r's executor applies to group g, as r's
// Coordinator last published it.
func (r *execReplica) limit(g string) int {
	for _, s := range r.coord.Status().Groups {
		if s.Group == g {
			return s.Limit
		}
	}
	return 1
}

// permits counts what the fleet's running tasks hold, at every instant,
// and the most held at once.
type permits struct{ cur, most atomic.Int64 }

func (p *permits) add(n int) {
	v := p.cur.Add(int64(n))
	for m := p.most.Load(); v > m && !p.most.CompareAndSwap(m, v); m = p.most.Load() {
	}
}

// fleetOpts are the options of the tests below, with fast syncs.
func fleetOpts(limits map[string]int) Options {
	return Options{
		Limits:        limits,
		LeaseTTL:      time.Second,
		RenewInterval: 300 * time.Millisecond,
		SyncInterval:  20 * time.Millisecond,
	}
}

// TestATenantsLimitIsSharedByTheFleet: a parent is a group like any other,
// so a tenant named in Limits bounds its users' tasks across the replicas.
// The users' own limits come from Base, and each replica applies them.
func TestATenantsLimitIsSharedByTheFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three replicas")
	}
	s := startRedis(t)
	opts := fleetOpts(map[string]int{"acme": 6})
	opts.Base = func() *groupconc.PolicyBuilder {
		return groupconc.NewPolicyBuilder().ParentSeparator("/").DefaultMaxConcurrencyPerGroup(2)
	}
	var (
		tenant permits
		done   atomic.Int64
		mu     sync.Mutex
		users  = map[string]*permits{} // guarded by mu: per replica and user
	)
	ctx, stop := context.WithCancel(context.Background())
	var feeders sync.WaitGroup
	for i := range 3 {
		r := startExecReplica(t, s, fmt.Sprintf("r%d", i), opts)
		feeders.Go(func() {
			slots := make(chan struct{}, 12) // twice the tenant's limit in flight
			for n := 0; ; n++ {
				select {
				case <-ctx.Done():
					return
				case slots <- struct{}{}:
				}
				key := fmt.Sprintf("acme/u%d", n%6)
				mu.Lock()
				u := users[fmt.Sprint(i, key)]
				if u == nil {
					u = &permits{}
					users[fmt.Sprint(i, key)] = u
				}
				mu.Unlock()
				_, err := groupconc.Submit(context.Background(), r.exec, key, "x", func(tctx context.Context) (struct{}, error) {
					defer func() { <-slots }()
					tenant.add(1)
					u.add(1)
					defer tenant.add(-1)
					defer u.add(-1)
					defer done.Add(1)
					select { // the task's work
					case <-time.After(2 * time.Millisecond):
					case <-tctx.Done():
					}
					return struct{}{}, nil
				})
				if err != nil {
					<-slots
					t.Errorf("submit: %v", err)
					return
				}
			}
		})
	}
	eventually(t, 20*time.Second, func() bool { return tenant.most.Load() == 6 && done.Load() >= 3000 },
		"the fleet ran at most %d of acme's tasks at once, %d tasks, want 6 and 3000", tenant.most.Load(), done.Load())
	stop()
	feeders.Wait()
	if m := tenant.most.Load(); m > 6 {
		t.Errorf("the fleet ran %d of acme's tasks at once, above the tenant's fleet limit 6", m)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, u := range users {
		if m := u.most.Load(); m > 2 {
			t.Errorf("replica and user %s ran %d tasks at once, above the user's limit 2", k, m)
		}
	}
	t.Logf("acme: at most %d at once across 3 replicas (fleet limit 6), %d tasks", tenant.most.Load(), done.Load())
}

// TestAReplicaKeepsThePermitsItsCostlyTasksHold: shares are in permits. A
// replica running two tasks of cost 3 keeps 6 of the limit while they run,
// though another replica is short and its own target is lower. Counting
// tasks (2) would give 4 back and let the fleet run 12 permits of 8.
func TestAReplicaKeepsThePermitsItsCostlyTasksHold(t *testing.T) {
	if testing.Short() {
		t.Skip("moves shares between two replicas")
	}
	s := startRedis(t)
	opts := fleetOpts(map[string]int{"t": 8})
	a, b := startExecReplica(t, s, "a", opts), startExecReplica(t, s, "b", opts)
	eventually(t, 10*time.Second, func() bool {
		return a.coord.Status().Mode == ModeConnected && b.coord.Status().Mode == ModeConnected
	}, "the replicas never joined")
	var fleet permits
	submit := func(r *execReplica, c int, gate chan struct{}, started chan struct{}) *groupconc.TaskHandle[struct{}] {
		t.Helper()
		h, err := groupconc.SubmitWith(context.Background(), r.exec, "t", "x", func(context.Context) (struct{}, error) {
			fleet.add(c) // each starts under a limit of at least c, so holds c
			defer fleet.add(-c)
			if started != nil {
				started <- struct{}{}
			}
			if gate == nil {
				gate = make(chan struct{})
				time.AfterFunc(5*time.Millisecond, func() { close(gate) })
			}
			<-gate
			return struct{}{}, nil
		}, groupconc.SubmitOptions{Cost: c})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	// a grows to 7 of 8 (b runs 1 without asking), then runs two tasks of
	// cost 3 under that share.
	warm := make(chan struct{})
	var hs []*groupconc.TaskHandle[struct{}]
	for range 7 {
		hs = append(hs, submit(a, 1, warm, nil))
	}
	eventually(t, 10*time.Second, func() bool { return a.limit("t") == 7 }, "a never grew to 7, at %d", a.limit("t"))
	close(warm)
	for _, h := range hs {
		h.Wait()
	}
	costly, started := make(chan struct{}), make(chan struct{}, 2)
	hs = []*groupconc.TaskHandle[struct{}]{submit(a, 3, costly, started), submit(a, 3, costly, started)}
	<-started
	<-started

	// b wants 8: a's target drops, but a keeps the 6 its tasks hold.
	ctx, stop := context.WithCancel(context.Background())
	var feeder sync.WaitGroup
	feeder.Go(func() {
		slots := make(chan struct{}, 8)
		for {
			select {
			case <-ctx.Done():
				return
			case slots <- struct{}{}:
			}
			h := submit(b, 1, nil, nil) // a nil gate: it works 5ms
			go func() { h.Wait(); <-slots }()
		}
	})
	eventually(t, 10*time.Second, func() bool { return a.limit("t") < 7 && b.limit("t") >= 2 },
		"b never got the 2 a does not hold: a at %d, b at %d", a.limit("t"), b.limit("t"))
	syncs := func(r *execReplica) time.Time { return r.coord.Status().LastSync }
	for from, n := syncs(b), 0; n < 10; n++ { // time for a wrong give-back to show
		eventually(t, 5*time.Second, func() bool { return syncs(b).After(from) }, "b stopped syncing")
		from = syncs(b)
	}
	if m := fleet.most.Load(); m > 8 {
		t.Errorf("while a's costly tasks ran, the fleet held %d permits at once, above its limit 8", m)
	}
	if l := b.limit("t"); l > 2 {
		t.Errorf("while a's tasks hold 6 of 8, b runs at %d, want at most 2", l)
	}
	close(costly)
	for _, h := range hs {
		h.Wait()
	}
	eventually(t, 10*time.Second, func() bool { return b.limit("t") >= 6 },
		"b never took what a gave back: b at %d", b.limit("t"))
	stop()
	feeder.Wait()
	if m := fleet.most.Load(); m > 8 {
		t.Errorf("the fleet held %d permits at once, above its limit 8", m)
	}
	t.Logf("the fleet held at most %d permits at once (limit 8)", fleet.most.Load())
}

// TestTheGlobalWantCountsEachTaskOnce: a replica wants a global slot for
// each task running or waiting, and for no task twice. Under fair share a
// task held back by its group's own limit holds no global permit yet, but
// counts, as it takes one when it starts. Under IsolationOff it took its
// global permit first: it counts as in flight, not as waiting too.
func TestTheGlobalWantCountsEachTaskOnce(t *testing.T) {
	for _, tc := range []struct {
		name         string
		mode         groupconc.IsolationMode
		limit, tasks int // of a's group g
		a, b         int // the global limit each should run
	}{
		{"fair share", groupconc.IsolationFairShare, 2, 6, 4, 4}, // a wants 6, b 8
		{"off", groupconc.IsolationOff, 1, 3, 3, 5},              // a wants 3, b 8
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startRedis(t)
			opts := fleetOpts(nil)
			opts.GlobalLimit = 8
			opts.Base = func() *groupconc.PolicyBuilder {
				return groupconc.NewPolicyBuilder().Isolation(tc.mode).
					PerGroupMaxConcurrency(map[string]int{"g": tc.limit}).DefaultMaxConcurrencyPerGroup(100)
			}
			a, b := startExecReplica(t, s, "a", opts), startExecReplica(t, s, "b", opts)
			gate := make(chan struct{})
			t.Cleanup(func() { close(gate) }) // before the replicas' own, which shut them down
			submitGated(t, a.exec, "g", tc.tasks, gate)
			submitGated(t, b.exec, "h", 8, gate)
			global := func(r *execReplica) int { return r.coord.Status().Global.Limit }
			settled := func() bool { return global(a) == tc.a && global(b) == tc.b }
			eventually(t, 10*time.Second, settled, "want a %d and b %d of the global 8", tc.a, tc.b)
			// A wrong count may pass through the split on its way elsewhere.
			for range 10 {
				last := a.coord.Status().LastSync
				eventually(t, 5*time.Second, func() bool { return a.coord.Status().LastSync.After(last) }, "a stopped syncing")
			}
			if !settled() {
				t.Errorf("the split moved on: a %d and b %d of the global 8, want %d and %d", global(a), global(b), tc.a, tc.b)
			}
		})
	}
}
