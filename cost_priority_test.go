package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// A task of higher priority goes ahead of a costly task that waits for
// more permits than are free. If it fits in them it starts at once: a task
// never waits behind a task of lower priority in the same line. Under fair
// share the global line and a parent's choose a group first, and the
// costly task stays chosen until it starts. So there the other group's
// task waits.
func TestCostHigherPriorityGoesAheadOfAWaitingCostlyTask(t *testing.T) {
	for _, at := range []string{"group", "global", "parent"} {
		t.Run(at, func(t *testing.T) {
			forEachEntry(t, costEntries, func(t *testing.T, mode groupconc.IsolationMode, en entry) {
				synctest.Test(t, func(t *testing.T) { costAheadByPriority(t, mode, en, at) })
			})
		})
	}
}

func costAheadByPriority(t *testing.T, mode groupconc.IsolationMode, en entry, at string) {
	b := builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(4)
	keys := []string{"g", "g", "g"}
	switch at {
	case "global":
		b = builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(10).GlobalMaxInFlight(4)
		keys = []string{"x", "y", "z"}
	case "parent":
		b = builder().Isolation(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(10).
			PerGroupMaxConcurrency(map[string]int{"acme": 4})
		keys = []string{"acme/x", "acme/y", "acme/z"}
	}
	e := newExecutor(t, b)
	hold := newGatedTask(t, 0)
	hh := submitGated(t, e, keys[0], "hold", hold, groupconc.SubmitOptions{Cost: 2})
	synctest.Wait()
	require.True(t, hold.started.Load())

	costly, cheap := newGatedTask(t, 1), newGatedTask(t, 2)
	low, high := en, en
	low.opts.Priority, high.opts.Priority = groupconc.PriorityLow, groupconc.PriorityHigh
	cc := low.start(t, t.Context(), e, keys[1], "costly", 3, costly.Fn)
	ch := high.start(t, t.Context(), e, keys[2], "cheap", 1, cheap.Fn)
	assert.False(t, costly.started.Load(), "3 permits needed, 2 free")
	if at == "group" || mode == groupconc.IsolationOff {
		assert.True(t, cheap.started.Load(), "ahead of the costly task by priority, and 2 permits free")
	} else {
		assert.False(t, cheap.started.Load(), "the fair choice fell on the costly task's group")
	}
	hold.Release()
	synctest.Wait()
	assert.True(t, costly.started.Load() && cheap.started.Load(), "4 permits free")
	costly.Release()
	cheap.Release()
	for _, c := range []*call{cc, ch} {
		st, err := c.status()
		assert.Equal(t, groupconc.StatusSuccess, st, "%v", err)
	}
	quiesce(t, e, append(handles(cc, ch), hh)...)
}

// A costly task and a cheaper one submitted after it, at one clock
// reading, to a paused group that has run a task before: on resume the
// costly one starts first ("tasks of one group and one priority start in
// submission order"). Under fair share only an extended task had a
// ticket to order it by, and the cheap one had none, so it went first.
func TestCostAResumedGroupStartsACostlyTaskBeforeTheCheapOneBehindIt(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).DefaultMaxConcurrencyPerGroup(1))
			_, err := groupconc.Do(t.Context(), e, "u", succeed, groupconc.SubmitOptions{})
			require.NoError(t, err)
			on, off := true, false
			require.NoError(t, e.SetGroupOverride("u", groupconc.GroupOverride{Paused: &on}))
			costly, cheap := newGatedTask(t, 1), newGatedTask(t, 2)
			hc := submitGated(t, e, "u", "costly", costly, groupconc.SubmitOptions{Cost: 2})
			hs := submitGated(t, e, "u", "cheap", cheap, groupconc.SubmitOptions{})
			require.NoError(t, e.SetGroupOverride("u", groupconc.GroupOverride{Paused: &off}))
			synctest.Wait()
			assert.True(t, costly.started.Load(), "submitted first")
			assert.False(t, cheap.started.Load(), "the costly task holds the limit")
			costly.Release()
			synctest.Wait()
			assert.True(t, cheap.started.Load())
			cheap.Release()
			quiesce(t, e, hc, hs)
		})
	})
}
