package httpgc

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// finder looks groups up in m alone.
func finder(m map[string]groupconc.GroupStats) lookup {
	return func(key string) (groupconc.GroupStats, bool) {
		st, ok := m[key]
		return st, ok
	}
}

// An ancestor is at its limit when its in-flight count is at a bounded
// bulkhead with tasks waiting before it, or its running cost at its
// concurrency. The nearest one is named, however far up; one that cannot
// be found ends the walk.
func TestParentLimitNamesTheNearestAncestorAtItsBulkheadOrConcurrency(t *testing.T) {
	const none = groupconc.Unlimited
	h := &Handler{e: adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder())}
	free := groupconc.GroupStats{MaxInFlight: none, Running: 1, InFlight: 1, MaxConcurrency: 10, RunningCost: 1}
	with := func(st groupconc.GroupStats, f func(*groupconc.GroupStats)) groupconc.GroupStats {
		f(&st)
		return st
	}
	for _, c := range []struct {
		name string
		m    map[string]groupconc.GroupStats
		want string
	}{
		{"a parent at its bulkhead", map[string]groupconc.GroupStats{
			"p": with(free, func(st *groupconc.GroupStats) { st.MaxInFlight, st.InFlight, st.Running, st.Waiting = 2, 2, 2, 1 })}, "p"},
		{"a parent at its bulkhead with a caller blocked", map[string]groupconc.GroupStats{
			"p": with(free, func(st *groupconc.GroupStats) { st.MaxInFlight, st.InFlight, st.Running, st.Blocked = 2, 2, 2, 1 })}, "p"},
		{"a parent at its bulkhead whose waiting tasks passed it", map[string]groupconc.GroupStats{
			"p": with(free, func(st *groupconc.GroupStats) { st.MaxInFlight, st.InFlight, st.Running, st.Waiting = 2, 2, 1, 1 })}, ""},
		{"a parent at its bulkhead whose other waiting task waits for the global cap first", map[string]groupconc.GroupStats{
			"p": with(free, func(st *groupconc.GroupStats) {
				st.MaxInFlight, st.InFlight, st.Running, st.Waiting, st.WaitingGlobal = 2, 2, 1, 2, 1
			})}, ""},
		{"a parent below its bulkhead", map[string]groupconc.GroupStats{
			"p": with(free, func(st *groupconc.GroupStats) { st.MaxInFlight, st.InFlight = 3, 2 })}, ""},
		{"a parent with an Unlimited bulkhead", map[string]groupconc.GroupStats{
			"p": with(free, func(st *groupconc.GroupStats) { st.InFlight = 50 })}, ""},
		{"a parent at its concurrency", map[string]groupconc.GroupStats{
			"p": with(free, func(st *groupconc.GroupStats) { st.RunningCost = 10 })}, "p"},
		{"a grandparent at its concurrency", map[string]groupconc.GroupStats{
			"p": with(free, func(st *groupconc.GroupStats) { st.Parent = "g" }),
			"g": with(free, func(st *groupconc.GroupStats) { st.RunningCost = 10 })}, "g"},
		{"a grandparent at its bulkhead", map[string]groupconc.GroupStats{
			"p": with(free, func(st *groupconc.GroupStats) { st.Parent = "g" }),
			"g": with(free, func(st *groupconc.GroupStats) { st.MaxInFlight, st.InFlight, st.Running, st.Waiting = 4, 4, 4, 1 })}, "g"},
		{"a parent that cannot be found", map[string]groupconc.GroupStats{}, ""},
	} {
		want := "own limit"
		if c.want != "" {
			want = "parent limit: " + c.want
		}
		assert.Equal(t, want, h.parentLimit(groupconc.GroupStats{GroupKey: "c", Parent: "p"}, "own limit", finder(c.m)), c.name)
	}
}

// Under fair share, when no ancestor is at its limit, parentLimit tells
// whether one has tasks waiting for a global permit. Under IsolationOff
// such tasks hold no ancestor's permits, so it never does.
func TestParentLimitTellsOfAnAncestorWaitingForAGlobalPermitUnderFairShareOnly(t *testing.T) {
	const none = groupconc.Unlimited
	parent := groupconc.GroupStats{MaxInFlight: none, InFlight: 1, MaxConcurrency: 10, RunningCost: 1, Parent: "g"}
	child := groupconc.GroupStats{GroupKey: "c", Parent: "p"}
	for _, c := range []struct {
		mode          groupconc.IsolationMode
		waitingGlobal int
		want          bool
	}{
		{groupconc.IsolationFairShare, 0, false},
		{groupconc.IsolationFairShare, 1, true},
		{groupconc.IsolationOff, 1, false},
	} {
		h := &Handler{e: adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().Isolation(c.mode))}
		grand := parent
		grand.Parent, grand.WaitingGlobal = "", c.waitingGlobal
		want := "own limit"
		if c.want {
			want = "global cap"
		}
		got := h.parentLimit(child, "own limit", finder(map[string]groupconc.GroupStats{"p": parent, "g": grand}))
		assert.Equal(t, want, got, "%v, %d waiting for a global permit", c.mode, c.waitingGlobal)
	}
}

// A child's first task is in flight: one of its two waiting tasks is,
// and none runs. Its parent's bulkhead of 2 holds it if no waiting task
// is past it. So it does below its count, which costly tasks fill. One
// may be past it, and one more held before it. Then the counts cannot say
// which is the child's: "own limit". With none held, the concurrency
// limits are next.
func TestParentLimitPlacesAChildsFirstTaskInFlight(t *testing.T) {
	h := &Handler{e: adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder())}
	child := groupconc.GroupStats{GroupKey: "c", Parent: "p", Waiting: 2, InFlight: 1, MaxInFlight: 1, MaxConcurrency: 5}
	for _, c := range []struct {
		name                       string
		running, inFlight, waiting int
		own, want                  string
	}{
		{"none past the full bulkhead", 2, 2, 2, "own limit", "parent limit: p"},
		{"none past a bulkhead costly tasks fill", 1, 1, 2, "own limit", "parent limit: p"},
		{"none past it, its own concurrency full", 2, 2, 2, "own limit: concurrency", "parent limit: p"},
		{"one past it and one more held", 1, 2, 3, "own limit", "own limit"},
		{"one past it, none held", 1, 2, 2, "own limit", "parent limit: p"},
		{"one past it, none held, its own concurrency full", 1, 2, 2, "own limit: concurrency", "own limit: concurrency"},
	} {
		p := groupconc.GroupStats{Running: c.running, InFlight: c.inFlight, Waiting: c.waiting, MaxInFlight: 2, MaxConcurrency: 2, RunningCost: 2}
		got := h.parentLimit(child, c.own, finder(map[string]groupconc.GroupStats{"p": p}))
		assert.Equal(t, c.want, got, c.name)
	}
}
