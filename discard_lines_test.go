package groupconc_test

// RejectDiscardOldest finds its victim wherever the queue's slot holders
// wait: a group's bulkhead, its concurrency limit, the global line under
// fair share, an ancestor's layers, or a pause line. Tasks submitted in
// one instant of the fake clock are ordered by arrival.

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

func TestDiscardOldestFindsTheOldestSlotHolderInWhicheverLineItWaits(t *testing.T) {
	fair := groupconc.IsolationFairShare
	type holders struct {
		name    string
		b       *groupconc.PolicyBuilder
		running []string // groups of the gated tasks that run first
		paused  string   // a group paused before the holders come
		key     string   // the group of the holders and the newcomer
	}
	cases := []holders{
		{"the bulkhead", builder().DefaultMaxInFlightPerGroup(1).DefaultMaxConcurrencyPerGroup(4).
			DefaultQueueThresholdPerGroup(2), []string{"a"}, "", "a"},
		{"the concurrency limit, the newer at the bulkhead", builder().DefaultMaxInFlightPerGroup(2).
			DefaultQueueThresholdPerGroup(2), []string{"a"}, "", "a"},
		{"the global line, the newer at the concurrency limit", builder().Isolation(fair).GlobalMaxInFlight(1).
			DefaultQueueThresholdPerGroup(2), []string{"x"}, "", "a"},
		{"the global line, under a running task of its own", builder().Isolation(fair).GlobalMaxInFlight(2).
			DefaultMaxConcurrencyPerGroup(2).DefaultQueueThresholdPerGroup(2), []string{"x", "a"}, "", "a"},
		{"the global line, with a parent", builder().Isolation(fair).ParentSeparator("/").GlobalMaxInFlight(1).
			DefaultMaxConcurrencyPerGroup(4).DefaultQueueThresholdPerGroup(2), []string{"x"}, "", "t/a"},
	}
	forModes := func(name string, b func(groupconc.IsolationMode) *groupconc.PolicyBuilder, running []string, paused, key string) {
		for _, m := range []groupconc.IsolationMode{groupconc.IsolationOff, fair} {
			cases = append(cases, holders{name + ", " + m.String(), b(m), running, paused, key})
		}
	}
	forModes("a pause line", func(m groupconc.IsolationMode) *groupconc.PolicyBuilder {
		return modeBuilder(m).DefaultQueueThresholdPerGroup(2)
	}, nil, "a", "a")
	forModes("a paused parent's line", func(m groupconc.IsolationMode) *groupconc.PolicyBuilder {
		return modeBuilder(m).ParentSeparator("/").DefaultQueueThresholdPerGroup(2)
	}, nil, "t", "t/a")
	forModes("a parent's bulkhead", func(m groupconc.IsolationMode) *groupconc.PolicyBuilder {
		return modeBuilder(m).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(4).
			PerGroupMaxInFlight(map[string]int{"t": 1}).PerGroupQueueThreshold(map[string]int{"t": 2})
	}, []string{"t/z"}, "", "t/a")
	forModes("a grandparent's concurrency limit", func(m groupconc.IsolationMode) *groupconc.PolicyBuilder {
		return modeBuilder(m).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(4).
			PerGroupMaxConcurrency(map[string]int{"t": 1}).PerGroupQueueThreshold(map[string]int{"t": 2})
	}, []string{"t/z"}, "", "t/a/b")

	paused := true
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := newRecorder()
				e := newExecutor(t, c.b.RejectionPolicy(groupconc.RejectDiscardOldest).TaskLifecycleListener(rec))
				var hs []*groupconc.TaskHandle[int]
				var ks []*gatedTask
				for _, g := range c.running {
					ks = append(ks, newGatedTask(t, 0))
					hs = append(hs, submitGated(t, e, g, "", ks[len(ks)-1], groupconc.SubmitOptions{}))
				}
				if c.paused != "" {
					hs = append(hs, submit(t, t.Context(), e, c.key, "first", succeed)) // makes the groups
					synctest.Wait()
					require.NoError(t, e.SetGroupOverride(c.paused, groupconc.GroupOverride{Paused: &paused}))
				}
				synctest.Wait()
				old := submit(t, t.Context(), e, c.key, "old", succeed)
				synctest.Wait()
				newer := submit(t, t.Context(), e, c.key, "newer", succeed)
				synctest.Wait()
				require.False(t, old.IsDone(), "old: %v, want it waiting", statusIfDone(old))
				require.False(t, newer.IsDone(), "newer: %v, want it waiting", statusIfDone(newer))

				n := submit(t, t.Context(), e, c.key, "n", succeed)
				synctest.Wait()
				assert.Equal(t, groupconc.StatusRejected, statusIfDone(old), "the oldest slot holder should be displaced")
				assert.Equal(t, groupconc.ReasonDisplaced, rec.Reason(c.key, "old"))
				assert.False(t, newer.IsDone(), "newer: %v, want it waiting", statusIfDone(newer))
				assert.False(t, n.IsDone(), "the newcomer: %v (%q), want it in old's slot", statusIfDone(n), rec.Reason(c.key, "n"))
				if c.paused != "" {
					require.NoError(t, e.SetGroupOverride(c.paused, groupconc.GroupOverride{}))
				}
				for _, k := range ks {
					k.Release()
				}
				quiesce(t, e, append(hs, old, newer, n)...)
				assert.Equal(t, groupconc.StatusSuccess, n.Wait().Status)
			})
		})
	}
}
