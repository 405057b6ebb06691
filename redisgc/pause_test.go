package redisgc

import (
	"context"
	"testing"
	"time"

	"github.com/kobe/groupconc"
)

// TestAPausedGroupWantsNoShare: a paused group's waiting tasks cannot
// start, so they ask for no share. Pausing a group on one replica does not
// hold the group back on another, nor the global limit.
func TestAPausedGroupWantsNoShare(t *testing.T) {
	if testing.Short() {
		t.Skip("moves shares between two replicas")
	}
	tenants := func() *groupconc.PolicyBuilder { return groupconc.NewPolicyBuilder().ParentSeparator("/") }
	fair := func() *groupconc.PolicyBuilder {
		return groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare)
	}
	for _, tc := range []struct {
		name, paused, key string
		base              func() *groupconc.PolicyBuilder
		global            bool
	}{
		{"group", "t", "t", groupconc.NewPolicyBuilder, false},
		{"user of a tenant", "t/u1", "t/u1", tenants, false},
		{"tenant", "t", "t/u1", tenants, false},
		{"child of a user of a tenant", "t/u1/x", "t/u1/x", tenants, false},
		{"global", "t", "t", groupconc.NewPolicyBuilder, true},
		{"global under fair share", "t", "t", fair, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startRedis(t)
			opts := fleetOpts(map[string]int{"t": 4})
			limit := func(r *execReplica) int { return r.limit("t") }
			if tc.global {
				opts = fleetOpts(nil)
				opts.GlobalLimit = 4
				limit = func(r *execReplica) int { return r.coord.Status().Global.Limit }
			}
			opts.Base = tc.base
			a, b := startExecReplica(t, s, "a", opts), startExecReplica(t, s, "b", opts)
			submit := func(r *execReplica, key string, gate chan struct{}) {
				t.Helper()
				_, err := groupconc.Submit(context.Background(), r.exec, key, "x", func(context.Context) (struct{}, error) {
					<-gate
					return struct{}{}, nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			// a knows the group, pauses it, then holds 6 tasks that cannot start.
			done := make(chan struct{})
			close(done)
			submit(a, tc.key, done)
			eventually(t, 5*time.Second, func() bool { return a.exec.Stats().Running+a.exec.Stats().Waiting == 0 }, "a's first task never ended")
			paused := true
			if err := a.exec.SetGroupOverride(tc.paused, groupconc.GroupOverride{Paused: &paused}); err != nil {
				t.Fatal(err)
			}
			gate := make(chan struct{})
			t.Cleanup(func() { // before the replicas' own, which shut them down
				close(gate)
				_ = a.exec.SetGroupOverride(tc.paused, groupconc.GroupOverride{}) // resumes
			})
			for range 6 {
				submit(a, tc.key, gate)
			}
			// b has 6 tasks to run: it gets all that a does not hold.
			for range 6 {
				submit(b, "t", gate)
			}
			eventually(t, 10*time.Second, func() bool { return limit(b) == 3 },
				"b never got the 3 of 4 that a does not run")
		})
	}
}

// TestAPausedSubtreeIsLeftOutOfTheGlobalWantOnce: the waiting tasks of a
// paused tenant's users are left out of the replica's global want once,
// not once for the tenant and again for each user, nor again at each
// sync. So the replica still wants what its other groups wait for.
func TestAPausedSubtreeIsLeftOutOfTheGlobalWantOnce(t *testing.T) {
	s := startRedis(t)
	opts := fleetOpts(nil)
	opts.GlobalLimit = 8
	opts.Base = func() *groupconc.PolicyBuilder {
		return groupconc.NewPolicyBuilder().ParentSeparator("/").Isolation(groupconc.IsolationFairShare).
			DefaultMaxConcurrencyPerGroup(100)
	}
	a, b := startExecReplica(t, s, "a", opts), startExecReplica(t, s, "b", opts)
	done := make(chan struct{})
	close(done)
	submitGated(t, a.exec, "t/u1", 1, done) // a knows t, to pause it
	eventually(t, 5*time.Second, func() bool { return a.exec.Stats().Running+a.exec.Stats().Waiting == 0 }, "a's first task never ended")
	paused := true
	if err := a.exec.SetGroupOverride("t", groupconc.GroupOverride{Paused: &paused}); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	t.Cleanup(func() { // before the replicas' own, which shut them down
		close(gate)
		_ = a.exec.SetGroupOverride("t", groupconc.GroupOverride{}) // resumes
	})
	submitGated(t, a.exec, "t/u1", 6, gate) // held by the pause
	submitGated(t, a.exec, "o", 6, gate)
	submitGated(t, b.exec, "h", 2, gate)
	global := func(r *execReplica) int { return r.coord.Status().Global.Limit }
	eventually(t, 10*time.Second, func() bool { return global(a) == 6 && global(b) == 2 },
		"a wants 6 for o and b 2 of 8, so a should run 6")
}
