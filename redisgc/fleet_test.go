package redisgc

import (
	"testing"
	"time"
)

// fleetTest is a coordination server, a witness server and replicas in
// child processes sharing the limit of group "t".
type fleetTest struct {
	coord *redisServer
	w     witness
	cfg   childConfig
	procs []*proc
}

func newFleetTest(t *testing.T, replicas int, cfg childConfig) *fleetTest {
	if testing.Short() {
		t.Skip("starts replica processes")
	}
	f := &fleetTest{coord: startRedis(t)}
	ws := startRedis(t)
	f.w = witness{t: t, c: ws.client(t)}
	cfg.Coord, cfg.Witness = f.coord.addr(), ws.addr()
	f.cfg = cfg
	f.procs = startProcs(t, replicas, cfg)
	return f
}

// stopAll stops every live replica and checks that none lost a task.
func (f *fleetTest) stopAll(t *testing.T) []map[string]int {
	var out []map[string]int
	for _, p := range f.procs {
		if p == nil {
			continue
		}
		d := p.stop()
		if d["failed"] != 0 || d["completed"] != d["submitted"] {
			t.Errorf("%s lost tasks: %v", p.name, d)
		}
		t.Logf("%s: %v", p.name, d)
		out = append(out, d)
	}
	return out
}

// checkMax checks the witness's maximum: never above the limit, and (if
// reach) equal to it.
func (f *fleetTest) checkMax(t *testing.T, reach bool) {
	m := f.w.get("max")
	if m > f.cfg.Limit {
		t.Errorf("the fleet ran %d tasks at once, above its limit %d", m, f.cfg.Limit)
	}
	if reach && m != f.cfg.Limit {
		t.Errorf("the fleet ran at most %d tasks at once, never its limit %d", m, f.cfg.Limit)
	}
}

func TestAFleetOfProcessesNeverRunsAboveItsLimitWhileSharesMove(t *testing.T) {
	f := newFleetTest(t, 3, childConfig{Limit: 6, TTL: 1500 * time.Millisecond,
		Renew: 300 * time.Millisecond, Sync: 30 * time.Millisecond})
	r := f.procs
	// r0 alone, then r1 too, then all three: shares move from r0 to the
	// others, then back as r0 and r1 run out of tasks.
	r[0].send("run 3000 2000")
	eventually(t, time.Minute, func() bool { return f.w.get("done") >= 800 }, "r0's tasks never ran")
	r[1].send("run 3000 2000")
	eventually(t, time.Minute, func() bool { return f.w.get("done") >= 2500 }, "r1's tasks never ran")
	r[2].send("run 4000 2000")
	eventually(t, 2*time.Minute, func() bool { return f.w.get("done") == 10000 }, "the 10 000 tasks never finished")
	total := 0
	for i, d := range f.stopAll(t) {
		total += d["completed"]
		// Each replica's limit moved; the first and the last were alone
		// for a while and held 6 less the 1 of each idle replica.
		if d["changes"] < 2 || (i != 1 && d["maxlimit"] < 4) {
			t.Errorf("r%d's limit never moved as shares should: %v", i, d)
		}
	}
	if total != 10000 {
		t.Errorf("completed %d tasks, want 10000", total)
	}
	f.checkMax(t, true)
}

func TestAKilledReplicasShareIsTakenByTheOthersWithinTheLease(t *testing.T) {
	cfg := childConfig{Limit: 6, TTL: time.Second, Renew: 400 * time.Millisecond, Sync: 30 * time.Millisecond}
	f := newFleetTest(t, 3, cfg)
	for _, p := range f.procs {
		p.send("loop 20000")
	}
	eventually(t, 20*time.Second, func() bool { return f.w.get("cur") == 6 }, "the fleet never reached 6")
	victim := f.procs[2]
	victim.kill()
	killed := time.Now()
	f.procs[2] = nil
	f.w.forget(victim.name)
	eventually(t, 10*time.Second, func() bool { return f.w.get("cur") == 6 }, "the survivors never reached 6")
	if took := time.Since(killed); took > cfg.TTL+cfg.Renew {
		t.Errorf("the survivors reached the limit %v after the kill, want within lease + renewal %v", took, cfg.TTL+cfg.Renew)
	} else {
		t.Logf("the survivors reached the limit %v after the kill", took)
	}
	f.stopAll(t)
	f.checkMax(t, true)
}

func TestAFleetThatLosesRedisKeepsToItsFallbackLosesNoTaskAndRecovers(t *testing.T) {
	cfg := childConfig{Limit: 9, Replicas: 3, TTL: 2 * time.Second, Renew: 300 * time.Millisecond, Sync: 30 * time.Millisecond}
	f := newFleetTest(t, 3, cfg)
	for _, p := range f.procs {
		p.send("loop 5000")
	}
	eventually(t, 20*time.Second, func() bool { return f.w.get("cur") == 9 }, "the fleet never reached 9")
	f.coord.stop()
	for _, p := range f.procs {
		p.waitMode(ModeFallback, 10*time.Second)
	}
	// Tasks go on in fallback.
	done := f.w.get("done")
	eventually(t, 20*time.Second, func() bool { return f.w.get("done") > done+300 }, "no task ran in fallback")
	f.coord.restart()
	for _, p := range f.procs {
		p.waitMode(ModeConnected, 10*time.Second)
	}
	eventually(t, 20*time.Second, func() bool { return f.w.get("cur") == 9 }, "the fleet never recovered 9")
	for _, d := range f.stopAll(t) {
		if d["fbmax"] > 3 || d["fblimit"] > 3 || d["fblimit"] == 0 {
			t.Errorf("in fallback a replica ran up to %d tasks with limits up to %d, want at most 9/3 = 3",
				d["fbmax"], d["fblimit"])
		}
	}
	f.checkMax(t, true)
}
