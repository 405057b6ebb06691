package redisgc

import (
	"testing"
	"time"
)

// TestAReplicaShowsItsLimitsBeforeRun: from New on, Status shows what the
// replica runs until it joins, 1 of each limit.
func TestAReplicaShowsItsLimitsBeforeRun(t *testing.T) {
	o := testOptions(12)
	o.GlobalLimit = 8
	c, err := newCoordinator(fakeScripter{}, newFakeExec(), o)
	if err != nil {
		t.Fatal(err)
	}
	st := c.Status()
	if want := (Share{FleetLimit: 8, Share: 1, Limit: 1}); st.Mode != ModeJoining || st.Global != want {
		t.Errorf("before Run: mode %v, global %+v; want joining, %+v", st.Mode, st.Global, want)
	}
}

// TestTheGlobalLimitFallsBackAsTheGroupsDo: a replica that loses Redis runs
// min(what it held, limit/ExpectedReplicas) of each limit, the global one
// too, and says so in its shares.
func TestTheGlobalLimitFallsBackAsTheGroupsDo(t *testing.T) {
	s := startRedis(t)
	o := testOptions(12)
	o.GlobalLimit, o.ExpectedReplicas = 8, 4
	a := startReplica(t, s.client(t), o)
	a.exec.set("t", 20, 0)
	eventually(t, 5*time.Second, func() bool { return a.exec.limit("t") == 12 && a.exec.globalLimit() == 8 },
		"a never took 12 of t and the global 8")
	s.stop()
	eventually(t, 5*time.Second, func() bool {
		g, sh := a.c.Status().Global, a.share("t")
		return a.c.Status().Mode == ModeFallback && g.Limit == 2 && g.Share == 2 && a.exec.globalLimit() == 2 &&
			sh.Limit == 3 && sh.Share == 3 && a.exec.limit("t") == 3
	}, "a never fell back to 3 of t and 2 of the global limit")
}
