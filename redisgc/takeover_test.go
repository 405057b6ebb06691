package redisgc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kobe/groupconc"
)

// takeover is an executor that runs more tasks of a fleet limit than the
// limit when New takes it over, its replica alone in the fleet. The tasks
// it ran before are old; those submitted after New are new.
type takeover struct {
	exec  *groupconc.GroupExecutor
	coord *Coordinator

	fleet          permits      // what every task holds, old and new
	oldRun, newRun permits      // what the old tasks hold, and the new ones
	startMax       atomic.Int64 // the most held as a new task started
	old, new       chan struct{}
	endOld         sync.Once
}

// runTakeover runs 6 old tasks (the i-th keyed key(i)), takes the executor
// over with opts, which set one fleet limit of 4, and submits 10 new tasks.
// It checks that once the old tasks end, the new ones run at most the
// limit, and that the replica's share (share picks it from a Status, hash
// is its key in Redis) is back within it.
func runTakeover(t *testing.T, opts Options, key func(i int) string, hash string, share func(Status) Share) {
	const limit, old, fresh = 4, 6, 10
	s := startRedis(t)
	base, err := opts.Base().Build()
	if err != nil {
		t.Fatal(err)
	}
	tk := &takeover{exec: groupconc.New(base), old: make(chan struct{}), new: make(chan struct{})}
	defer close(tk.new)
	tk.submit(t, old, key, false)
	defer tk.releaseOld() // if the test fails before
	eventually(t, 5*time.Second, func() bool { return tk.oldRun.cur.Load() == old }, "the %d old tasks never ran", old)

	opts.Name = "a"
	c, err := New(s.client(t), tk.exec, opts)
	if err != nil {
		t.Fatal(err)
	}
	tk.coord = c
	errc := make(chan error, 1)
	go func() { errc <- c.Run(context.Background()) }()
	t.Cleanup(func() {
		_ = c.Close()
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Errorf("Run after Close: got %v, want ErrClosed", err)
		}
		_ = tk.exec.Shutdown(context.Background())
	})
	tk.submit(t, fresh, key, true)
	eventually(t, 10*time.Second, func() bool { return c.Status().Mode == ModeConnected }, "never joined")
	tk.syncs(t, 3) // renewals while the old tasks run

	tk.releaseOld()
	eventually(t, 5*time.Second, func() bool { return tk.oldRun.cur.Load() == 0 }, "the old tasks never ended")
	eventually(t, 10*time.Second, func() bool { return tk.newRun.cur.Load() >= limit },
		"the new tasks never ran the limit %d, at %d", limit, tk.newRun.cur.Load())
	tk.syncs(t, 10) // time for a wrong raise to show

	if m := tk.newRun.most.Load(); m > limit {
		t.Errorf("after the tasks running at the takeover ended, %d new tasks ran at once, above the fleet limit %d", m, limit)
	}
	if m := tk.startMax.Load(); m > limit {
		t.Errorf("a new task started with %d running, above the fleet limit %d", m, limit)
	}
	if sh := share(c.Status()); sh.Limit > limit || sh.Share > limit {
		t.Errorf("once the old tasks ended the replica has %+v, want a limit and share of at most %d", sh, limit)
	}
	stored, err := s.client(t).HGet(context.Background(), hash, "s:"+c.Status().Member).Result()
	if n, _ := strconv.Atoi(stored); err != nil || n > limit {
		t.Errorf("Redis stores a share of %q (%v) for the replica, want at most %d", stored, err, limit)
	}
}

// submit submits n tasks, the i-th keyed key(i), old or new. Each runs
// until its kind's gate closes.
func (tk *takeover) submit(t *testing.T, n int, key func(i int) string, isNew bool) {
	t.Helper()
	gate, run := tk.old, &tk.oldRun
	if isNew {
		gate, run = tk.new, &tk.newRun
	}
	for i := range n {
		_, err := groupconc.Submit(context.Background(), tk.exec, key(i), "x", func(context.Context) (struct{}, error) {
			tk.fleet.add(1)
			defer tk.fleet.add(-1)
			run.add(1)
			defer run.add(-1)
			if isNew {
				// An old task leaves the count before its permit: the count
				// is never above what the executor runs.
				c := tk.fleet.cur.Load()
				for m := tk.startMax.Load(); c > m && !tk.startMax.CompareAndSwap(m, c); m = tk.startMax.Load() {
				}
			}
			<-gate
			return struct{}{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// releaseOld lets the old tasks end.
func (tk *takeover) releaseOld() { tk.endOld.Do(func() { close(tk.old) }) }

// syncs waits for n more successful syncs of the replica.
func (tk *takeover) syncs(t *testing.T, n int) {
	t.Helper()
	for from := tk.coord.Status().LastSync; n > 0; n-- {
		eventually(t, 5*time.Second, func() bool { return tk.coord.Status().LastSync.After(from) }, "the replica stopped syncing")
		from = tk.coord.Status().LastSync
	}
}

// groupShare returns the share of group g in s.
func groupShare(g string) func(Status) Share {
	return func(s Status) Share {
		for _, sh := range s.Groups {
			if sh.Group == g {
				return sh
			}
		}
		return Share{Group: g, Limit: 1, Share: 1}
	}
}

// TestAGroupsFleetLimitHoldsAfterATakeoverOfAnExecutorRunningAboveIt:
// Limits promises the fleet's tasks of g hold at most Limits[g]. A replica
// alone, whose executor ran 6 of g (fleet limit 4) when New took it over,
// declared 6 on joining and kept its local limit at 6: after the old 6
// ended, 6 new tasks ran at once.
func TestAGroupsFleetLimitHoldsAfterATakeoverOfAnExecutorRunningAboveIt(t *testing.T) {
	opts := fleetOpts(map[string]int{"g": 4})
	opts.Base = func() *groupconc.PolicyBuilder { return groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(10) }
	runTakeover(t, opts, func(int) string { return "g" }, "{groupconc}:g:g", groupShare("g"))
}

// TestTheGlobalLimitHoldsAfterATakeoverOfAnExecutorRunningAboveIt: the
// same for GlobalLimit, the executor running 6 tasks of 6 groups.
func TestTheGlobalLimitHoldsAfterATakeoverOfAnExecutorRunningAboveIt(t *testing.T) {
	opts := fleetOpts(nil)
	opts.GlobalLimit = 4
	opts.Base = func() *groupconc.PolicyBuilder { return groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(10) }
	runTakeover(t, opts, func(i int) string { return fmt.Sprintf("u%d", i) }, "{groupconc}:global",
		func(s Status) Share { return s.Global })
}

// TestATenantsFleetLimitHoldsAfterATakeoverOfAnExecutorRunningAboveIt: the
// same for a tenant's limit, its users running 6 tasks.
func TestATenantsFleetLimitHoldsAfterATakeoverOfAnExecutorRunningAboveIt(t *testing.T) {
	opts := fleetOpts(map[string]int{"acme": 4})
	opts.Base = func() *groupconc.PolicyBuilder {
		return groupconc.NewPolicyBuilder().ParentSeparator("/").DefaultMaxConcurrencyPerGroup(10)
	}
	runTakeover(t, opts, func(i int) string { return fmt.Sprintf("acme/u%d", i%6) }, "{groupconc}:g:acme", groupShare("acme"))
}
