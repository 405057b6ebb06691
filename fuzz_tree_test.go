package groupconc_test

// FuzzOps' groups of groups and costs: the input's first byte picks the
// isolation mode, keys with parents ("t0/u1/x" under "t0/u1" under "t0",
// and tops "t1" that run tasks of their own), task costs, and with either
// of these an op that sets group overrides (pauses among them).

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
)

// fuzzOpOverride is an op only the shapes with parents or costs decode.
const (
	fuzzOpOverride = fuzzOpCount + iota
	fuzzOpCountTree
)

// fuzzShape is what FuzzOps' first byte picks.
type fuzzShape struct {
	mode     groupconc.IsolationMode
	tree     bool     // keys with parents, under ParentSeparator("/")
	resolved bool     // with tree, parents by fuzzResolvedParent as well
	costs    bool     // each submit reads a cost, 0 to 5
	keys     []string // the first three are those the policy's maps name
	ops      int      // the ops decoded

	// callerRuns and handler are set by the last policy decoded: whether
	// it runs a rejected task on its caller (RejectCallerRuns with no
	// handler), and whether it has a RejectionHandler.
	callerRuns, handler bool
}

// fuzzTreeKeys are the keys of the shapes with parents: tenants t0 and t1,
// users under them, and a group under a user.
var fuzzTreeKeys = []string{"t0/u1", "t0", "t1", "t0/u1/x", "t0/u2", "t1/u1"}

// fuzzResolvedParent is the ParentResolver of the shapes that set one.
// It decides alone: "t0/u1/x" is a child of "t0", "t1/u1" has no parent,
// and the others have the parent the separator names.
func fuzzResolvedParent(key string) string {
	switch key {
	case "t0/u1/x":
		return "t0"
	case "t1/u1":
		return ""
	}
	if i := strings.LastIndex(key, "/"); i > 0 {
		return key[:i]
	}
	return ""
}

// fuzzShapeOf decodes a shape from one byte: bit 0 the mode, bit 1
// parents, bit 2 costs, bit 3 parents by a ParentResolver. The seeds' 0
// and 1 are the flat shapes of old.
func fuzzShapeOf(v byte) *fuzzShape {
	sh := &fuzzShape{
		mode:     fuzzPick(v, groupconc.IsolationOff, groupconc.IsolationFairShare),
		tree:     v&2 != 0,
		resolved: v&10 == 10,
		costs:    v&4 != 0,
		keys:     []string{"a", "b", "c"},
		ops:      fuzzOpCount,
	}
	if sh.tree {
		sh.keys = fuzzTreeKeys
	}
	if sh.tree || sh.costs {
		sh.ops = fuzzOpCountTree
	}
	return sh
}

// fuzzTreeLimits decodes three bytes of limits for parents and children
// into the policy's maps: the tenants' concurrency and bulkheads, a user's
// and a grandchild's concurrency, and queue thresholds of a tenant and a
// user. The maps may hold t1's concurrency already.
func fuzzTreeLimits(in *fuzzBytes, conc, inFlight, queue map[string]int) {
	set := func(m map[string]int, key string, v int) {
		if v > 0 {
			m[key] = v
		}
	}
	v := int(in.next())
	set(conc, "t0", fuzzPick(byte(v), 0, 1, 2, 3, 4))
	set(conc, "t0/u1", fuzzPick(byte(v/5), 0, 1, 2))
	set(conc, "t0/u1/x", fuzzPick(byte(v/15), 0, 1))
	v = int(in.next())
	set(inFlight, "t0", fuzzPick(byte(v), 0, 1, 2, 3))
	set(inFlight, "t1", fuzzPick(byte(v/4), 0, 1, 2))
	set(inFlight, "t0/u2", fuzzPick(byte(v/12), 0, 1))
	v = int(in.next())
	if q := int(v%4) - 1; q >= 0 {
		queue["t0"] = q
	}
	if q := int(v/4%3) - 1; q >= 0 {
		queue["t0/u1"] = q
	}
}

// fuzzOverride sets or drops key's override, decoded from one byte: a
// pause, a resume, a concurrency limit, a bulkhead and a queue threshold,
// or nothing (which drops it); the top bit pauses as well. The oracle
// learns of it first, as a task may start during the call.
func fuzzOverride(t *testing.T, e *groupconc.GroupExecutor, o *oracle, key, gaugeKey string, v byte, closing bool) {
	u := groupconc.Unlimited
	yes, no := true, false
	n := func(x int) *int { return &x }
	var ov groupconc.GroupOverride
	switch v & 0x7f % 5 {
	case 0:
		ov.Paused = &yes
	case 1:
		ov.Paused = &no
	case 2:
		ov.MaxConcurrency = n(fuzzPick(v/5, 1, 2, 3, u))
	case 3:
		ov.MaxInFlight = n(fuzzPick(v/5, 1, 2, u))
		ov.QueueThreshold = n(fuzzPick(v/15, 0, 1, u))
	}
	if v&0x80 != 0 {
		ov.Paused = &yes
	}
	_, known := e.GroupStats(key)
	undo := func() {}
	if known && !closing {
		undo = o.live.setOverride(gaugeKey, ov)
	}
	err := e.SetGroupOverride(key, ov)
	switch {
	case err == nil:
		assert.True(t, known && !closing, "SetGroupOverride of %q took (known %v, closing %v)", key, known, closing)
	case closing:
		undo()
		assert.ErrorIs(t, err, groupconc.ErrClosed)
	default:
		undo()
		assert.ErrorIs(t, err, groupconc.ErrUnknownGroup, "SetGroupOverride of %q", key)
	}
}

// fuzzSubtree returns the keys of keys in key's subtree, key among them.
func fuzzSubtree(p *groupconc.GroupPolicy, keys []string, key string) []string {
	var sub []string
	for _, k := range keys {
		for a := k; a != ""; a = p.ResolveParent(a) {
			if a == key {
				sub = append(sub, k)
				break
			}
		}
	}
	return sub
}

// fuzzIdleGroups returns the keys of the groups that are known and idle in a
// still executor: nothing of theirs waits or runs, with permits or without
// (a function run after a rejection belongs to no group's count, so any
// such function running anywhere makes none idle), no caller blocks to
// submit to them (a blocked caller keeps its group), none is paused or
// under a paused group, and no group under them is known (a parent is
// remembered while a child is, and forgotten a TTL after).
func fuzzIdleGroups(e *groupconc.GroupExecutor, o *oracle, p *groupconc.GroupPolicy, keys []string) []string {
	if o.gauges.outside.cur.Load() != 0 {
		return nil
	}
	var idle []string
	for _, k := range keys {
		gs, found := e.GroupStats(k)
		if !found || gs.Running != 0 || gs.Waiting != 0 || gs.InFlight != 0 || gs.Blocked != 0 || gs.Paused {
			continue
		}
		sub := fuzzSubtree(p, keys, k)
		busy := false
		for _, d := range sub {
			if _, found := e.GroupStats(d); (found && d != k) || o.gauges.group(o.live.scopeOf(d)).cur.Load() != 0 {
				busy = true
			}
		}
		if !busy {
			idle = append(idle, k)
		}
	}
	return idle
}

// fuzzTreeSeeds are FuzzOps seeds of the shapes with parents and costs
// (shape 6, and 14 with a ParentResolver) or costs alone (4), each in
// both modes.
func fuzzTreeSeeds() [][]byte {
	const block, bl = fuzzDoBlock, 0x40 // a gated task; SubmitWith{Block}
	sub := func(key, do, opts, cost byte) []byte { return []byte{fuzzOpSubmit, key, do, 0, opts, cost} }
	cat := func(parts ...[]byte) []byte { return slices.Concat(parts...) }
	over := func(key, v byte) []byte { return []byte{fuzzOpOverride, key, v} }
	var seeds [][]byte
	for _, seed := range []struct {
		shape byte
		ops   []byte
	}{
		// Tenant t0 of limit 3 over users of limit 2: costs fill it, t0's
		// own costly task waits at the head of its line, a pause of t0
		// holds back its subtree, then a resume, an update lowering the
		// user limit to 1, and the eviction of t0's subtree.
		{6, cat([]byte{0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0},
			sub(0, block, 0, 1), sub(0, block, 0, 1), sub(0, block, 0, 1), sub(4, block, 0, 1),
			sub(1, block, 0, 5), sub(3, block, 0, 0), sub(2, block, 0, 4), sub(5, block, 0, 2),
			over(1, 0), []byte{fuzzOpRelease, 0, fuzzOpRelease, 3}, sub(4, fuzzDoSucceed, 0, 2),
			over(1, 1), []byte{fuzzOpUpdate, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0},
			[]byte{fuzzOpRelease, 1, fuzzOpEvict, 1}, sub(0, block, 0, 3), []byte{fuzzOpReleaseAll, fuzzOpSleep, 3})},
		// Global cap 2 and costs above every limit: a cost-5 task takes
		// the whole cap; t0's queue threshold 0 turns a child's blocked
		// caller away; a grandchild's override raises its limit; the
		// oldest is discarded; t0's subtree is shut down.
		{6, cat([]byte{2, 0, 0, 1, 2, 6, 0, 0, 0, 0, 2, 1, 1},
			sub(3, block, 0, 5), sub(0, block, bl, 2), sub(0, block, 1, 1), sub(4, fuzzDoSleep, 0, 3),
			over(3, 2+5*3), sub(3, block, 2, 2), []byte{fuzzOpSleep, 4}, sub(2, block, bl, 5), sub(5, block, 0, 1),
			[]byte{fuzzOpShutdownGroup, 1, fuzzOpUpdate, 6, 2 + 3*1}, over(2, 0x80|3), sub(5, block, 0, 1),
			[]byte{fuzzOpRelease, 0, fuzzOpReleaseAll, fuzzOpSleep, 9})},
		// RejectCallerRuns under thresholds 0: t1's second task runs on
		// its caller; once t1 is paused, one turned away never runs.
		{6, cat([]byte{0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0},
			sub(2, block, 0, 1), sub(2, block, 0, 1), over(2, 0), sub(2, fuzzDoSucceed, 0, 3), sub(5, fuzzDoSucceed, 0, 1),
			over(2, 1), []byte{fuzzOpReleaseAll})},
		// Costs on flat keys over a lowered limit.
		{4, cat([]byte{3, 0, 2, 4, 0, 0, 0, 0, 0, 0},
			sub(0, block, 0, 5), sub(0, block, 0, 2), sub(1, block, 0, 3), sub(1, block, 0, 1),
			over(0, 2), []byte{fuzzOpUpdate, 6, 2 + 3*1, fuzzOpRelease, 0, fuzzOpRelease, 2, fuzzOpReleaseAll})},
	} {
		for _, mode := range []byte{0, 1} {
			seeds = append(seeds, append([]byte{seed.shape | mode}, seed.ops...))
			if seed.shape&2 != 0 {
				seeds = append(seeds, append([]byte{seed.shape | 8 | mode}, seed.ops...))
			}
		}
	}
	return seeds
}

// fuzzTrace, set by FUZZ_TRACE=1, logs the executor's state after each
// step: run one failing input with -v to see what it did.
var fuzzTrace = os.Getenv("FUZZ_TRACE") != ""

func fuzzTraceStep(t *testing.T, e *groupconc.GroupExecutor, keys []string, step string) {
	t.Logf("%s; %+v", step, e.Stats())
	for _, k := range keys {
		if gs, ok := e.GroupStats(k); ok {
			t.Logf("   %s: %+v", k, gs)
		}
	}
}
