package redisgc

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// fakeExec is a target whose tasks are instantaneous: each group runs
// min(demand, limit) tasks, except that a lowered limit leaves running what
// a test pinned until it unpins it.
type fakeExec struct {
	mu     sync.Mutex
	demand map[string]int // guarded by mu
	pinned map[string]int // guarded by mu: running that does not drop
	limits map[string]int // guarded by mu: as last applied
	global int            // guarded by mu
}

func newFakeExec() *fakeExec {
	return &fakeExec{demand: map[string]int{}, pinned: map[string]int{}, limits: map[string]int{}}
}

func (f *fakeExec) set(g string, demand, pinned int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.demand[g], f.pinned[g] = demand, pinned
}

func (f *fakeExec) limit(g string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return max(f.limits[g], 1)
}

func (f *fakeExec) runningLocked(g string) int {
	return max(min(f.demand[g], max(f.limits[g], 1)), f.pinned[g])
}

func (f *fakeExec) groups(yield func(string, load) bool) {
	f.mu.Lock()
	loads := map[string]load{}
	for g, d := range f.demand {
		r := f.runningLocked(g)
		loads[g] = load{running: r, waiting: max(d-r, 0)}
	}
	f.mu.Unlock()
	for g, l := range loads {
		if !yield(g, l) {
			return
		}
	}
}

func (f *fakeExec) total() load {
	var t load
	for _, l := range f.groups {
		t.running, t.waiting = t.running+l.running, t.waiting+l.waiting
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.global > 0 && t.running > f.global {
		t.running, t.waiting = f.global, t.waiting+t.running-f.global
	}
	return t
}

func (f *fakeExec) globalLimit() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.global
}

func (f *fakeExec) closed() error { return nil }

func (f *fakeExec) remembered() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.demand)
}

func (f *fakeExec) apply(limits map[string]int, global int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limits, f.global = limits, global
	return nil
}

// replica is a Coordinator over a fakeExec, running until the test ends.
type replica struct {
	c    *Coordinator
	exec *fakeExec
	errc chan error
	once sync.Once
	err  error // Run's error
}

func startReplica(t *testing.T, client redis.Scripter, o Options) *replica {
	t.Helper()
	r := &replica{exec: newFakeExec(), errc: make(chan error, 1)}
	c, err := newCoordinator(client, r.exec, o)
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	go func() { r.errc <- c.Run(context.Background()) }()
	t.Cleanup(func() { r.close(t) })
	return r
}

func (r *replica) close(t *testing.T) {
	r.once.Do(func() {
		_ = r.c.Close()
		r.err = <-r.errc
	})
	if !errors.Is(r.err, ErrClosed) {
		t.Errorf("Run after Close: got %v, want ErrClosed", r.err)
	}
}

// syncs waits for r's next n successful syncs.
func (r *replica) syncs(t *testing.T, n int) {
	t.Helper()
	for range n {
		last := r.c.Status().LastSync
		eventually(t, 5*time.Second, func() bool { return r.c.Status().LastSync.After(last) }, "no sync")
	}
}

func (r *replica) share(g string) Share {
	for _, s := range r.c.Status().Groups {
		if s.Group == g {
			return s
		}
	}
	return Share{Group: g, Share: 1, Limit: 1}
}

func testOptions(limit int) Options {
	return Options{
		Limits:        map[string]int{"t": limit},
		LeaseTTL:      600 * time.Millisecond,
		RenewInterval: 150 * time.Millisecond,
		SyncInterval:  20 * time.Millisecond,
	}
}

func TestSharesFollowDemandAcrossReplicasAndNeverSumAboveTheLimit(t *testing.T) {
	s := startRedis(t)
	var rs []*replica
	for range 3 {
		rs = append(rs, startReplica(t, s.client(t), testOptions(12)))
	}
	sum := func() int {
		n := 0
		for _, r := range rs {
			n += r.exec.limit("t")
		}
		if n > 12 {
			t.Fatalf("local limits sum to %d, above 12", n)
		}
		return n
	}
	rs[0].exec.set("t", 30, 0)
	eventually(t, 5*time.Second, func() bool { return rs[0].exec.limit("t") == 10 && sum() == 12 },
		"a busy replica never took what the others do not use: got %d", rs[0].exec.limit("t"))
	rs[1].exec.set("t", 30, 0)
	rs[2].exec.set("t", 30, 0)
	eventually(t, 5*time.Second, func() bool {
		return sum() == 12 && rs[0].exec.limit("t") == 4 && rs[1].exec.limit("t") == 4
	}, "three busy replicas never split 12 evenly")
	rs[0].exec.set("t", 0, 0)
	rs[1].exec.set("t", 0, 0)
	eventually(t, 5*time.Second, func() bool { return sum() == 12 && rs[2].exec.limit("t") == 10 },
		"the last busy replica never took the idle ones' shares")
}

func TestALoweredLimitIsGivenBackOnlyOnceItsTasksHaveFinished(t *testing.T) {
	s := startRedis(t)
	a := startReplica(t, s.client(t), testOptions(10))
	b := startReplica(t, s.client(t), testOptions(10))
	a.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return a.exec.limit("t") == 9 }, "a never took 9")
	a.exec.set("t", 20, 9) // a's 9 tasks run on, whatever its limit
	b.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return a.exec.limit("t") == 5 }, "a never lowered its limit")
	for range 5 {
		a.syncs(t, 1)
		b.syncs(t, 1)
		if got := a.share("t").Share; got != 9 {
			t.Fatalf("a gave back share while 9 tasks run: holds %d", got)
		}
		if got := b.exec.limit("t"); got != 1 {
			t.Fatalf("b grew while a's tasks run: limit %d", got)
		}
	}
	a.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return b.exec.limit("t") == 5 && a.share("t").Share == 5 },
		"a's share never moved to b once a's tasks finished")
}

func TestAReplicaThatLosesRedisHoldsItsShareThenFallsBackAndRejoins(t *testing.T) {
	s := startRedis(t)
	o := testOptions(12)
	o.ExpectedReplicas = 4
	a := startReplica(t, s.client(t), o)
	a.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return a.exec.limit("t") == 12 }, "a never took 12")
	s.stop()
	eventually(t, 5*time.Second, func() bool { return a.c.Status().Mode == ModeHolding }, "a never noticed")
	// Read once a sync has failed: redis-server answers for a moment after
	// it is told to stop, so a renewal may land after s.stop.
	last := a.c.Status().LastSync
	if got := a.exec.limit("t"); got != 12 {
		t.Fatalf("holding: limit %d, want the 12 held", got)
	}
	eventually(t, 5*time.Second, func() bool { return a.c.Status().Mode == ModeFallback }, "a never fell back")
	if lasted := time.Since(last); lasted < o.LeaseTTL*9/10 || lasted > o.LeaseTTL+o.RenewInterval {
		t.Errorf("fell back %v after the last renewal, want about the lease TTL %v", lasted, o.LeaseTTL)
	}
	if got := a.exec.limit("t"); got != 3 {
		t.Fatalf("fallback: limit %d, want 12/4 = 3", got)
	}
	s.restart()
	eventually(t, 5*time.Second, func() bool { return a.c.Status().Mode == ModeConnected }, "a never rejoined")
	eventually(t, 5*time.Second, func() bool { return a.exec.limit("t") == 12 }, "a never regained 12")
}

func TestCloseLeavesTheFleetAndKeepsTheFallback(t *testing.T) {
	s := startRedis(t)
	a := startReplica(t, s.client(t), testOptions(12))
	b := startReplica(t, s.client(t), testOptions(12))
	a.exec.set("t", 20, 0)
	b.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return a.exec.limit("t") == 6 && b.exec.limit("t") == 6 },
		"never split")
	if st := a.c.Status(); len(st.Groups) == 1 {
		st.Groups[0].Share = -1
		if a.c.Status().Groups[0].Share == -1 {
			t.Errorf("a change to a Status's Groups shows in the next Status")
		}
	}
	a.exec.set("t", 0, 0)
	a.close(t)
	if st := a.c.Status(); st.Mode != ModeStopped || st.Member != "" {
		t.Fatalf("after Close: got %+v, want stopped without a member", st)
	}
	eventually(t, 2*time.Second, func() bool { return b.exec.limit("t") == 12 },
		"b never took the share a gave back on Close")
	if err := a.c.Run(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Close: got %v, want ErrClosed", err)
	}
	// The refused Run holds nothing up.
	if st := a.c.Status(); st.Mode != ModeStopped {
		t.Errorf("after a Run after Close: mode %v, want stopped", st.Mode)
	}
	if err := a.c.Close(); err != nil {
		t.Errorf("Close after a Run after Close: %v", err)
	}
}

func TestTheGlobalLimitIsSharedAcrossGroupsAndReplicas(t *testing.T) {
	s := startRedis(t)
	o := testOptions(0)
	o.Limits, o.DefaultLimit, o.GlobalLimit = nil, 100, 8
	a := startReplica(t, s.client(t), o)
	b := startReplica(t, s.client(t), o)
	if a.exec.globalLimit() != 1 {
		t.Fatalf("before joining: global limit %d, want 1", a.exec.globalLimit())
	}
	a.exec.set("x", 10, 0)
	a.exec.set("y", 10, 0)
	eventually(t, 5*time.Second, func() bool { return a.exec.globalLimit() == 7 && a.exec.limit("x") == 10 },
		"a alone never took 7 of 8 (got %d)", a.exec.globalLimit())
	b.exec.set("y", 10, 0)
	eventually(t, 5*time.Second, func() bool {
		ga, gb := a.exec.globalLimit(), b.exec.globalLimit()
		if ga+gb > 8 {
			t.Fatalf("global limits sum to %d+%d, above 8", ga, gb)
		}
		return ga == 4 && gb == 4
	}, "the global limit never split 4/4")
	if st := a.c.Status(); st.Global.FleetLimit != 8 || st.Global.Limit != 4 {
		t.Errorf("status: got %+v, want the global share", st.Global)
	}
}

func TestAnIdleGroupIsGivenBackAfterARenewIntervalAndLeavesNoKey(t *testing.T) {
	s := startRedis(t)
	o := testOptions(12)
	a := startReplica(t, s.client(t), o)
	a.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return a.exec.limit("t") == 12 }, "a never took 12")
	a.exec.set("t", 0, 0)
	idle := time.Now()
	a.syncs(t, 2)
	// The coordinator counts the group idle from the last step that saw
	// demand, which may come a step before idle: half an interval is sure.
	if got := a.exec.limit("t"); got != 12 && time.Since(idle) < o.RenewInterval/2 {
		t.Fatalf("idle for less than a RenewInterval: limit %d, want 12 kept", got)
	}
	d := o.withDefaultsOrDie(t)
	key, rc := d.groupKey("t"), s.client(t)
	eventually(t, 5*time.Second, func() bool {
		return a.exec.limit("t") == 1 && rc.Exists(context.Background(), key).Val() == 0
	}, "an idle group kept its share or its key")
}
