package groupconc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Under fair share a costly task the fair choice fell on stays chosen
// until it starts, at the global cap and at a parent's limit. An urgent
// task of its own group waits behind it there, even where it would fit in
// the permits that are free. Under IsolationOff it goes ahead. The
// Priority doc comment, tenants.md and priorities.md say so.
func TestCostAChosenCostlyTaskHoldsBackAnUrgentTaskOfItsGroup(t *testing.T) {
	for _, at := range []string{"global", "parent"} {
		t.Run(at, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
				synctest.Test(t, func(t *testing.T) { costChosenAhead(t, mode, at) })
			})
		})
	}
}

func costChosenAhead(t *testing.T, mode groupconc.IsolationMode, at string) {
	b := builder().Isolation(mode).DefaultMaxConcurrencyPerGroup(10).GlobalMaxInFlight(4)
	holdKey, key := "h", "g"
	if at == "parent" {
		b = builder().Isolation(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(10).
			PerGroupMaxConcurrency(map[string]int{"acme": 4})
		holdKey, key = "acme/h", "acme/g"
	}
	e := newExecutor(t, b)
	hold := newGatedTask(t, 0)
	hh := submitGated(t, e, holdKey, "hold", hold, groupconc.SubmitOptions{Cost: 2})
	synctest.Wait()
	require.True(t, hold.started.Load())

	costly, urgent := newGatedTask(t, 1), newGatedTask(t, 2)
	hc := submitGated(t, e, key, "costly", costly, groupconc.SubmitOptions{Cost: 3})
	hu := submitGated(t, e, key, "urgent", urgent, groupconc.SubmitOptions{Priority: groupconc.PriorityHighest})
	synctest.Wait()
	assert.False(t, costly.started.Load(), "3 permits needed, 2 free")
	if mode == groupconc.IsolationOff {
		assert.True(t, urgent.started.Load(), "ahead by priority, and it fits")
	} else {
		assert.False(t, urgent.started.Load(), "the costly task stays chosen until it starts")
		pos, ok := hu.Position()
		require.True(t, ok)
		assert.Equal(t, 1, pos.Ahead, "the costly task is ahead of it")
	}
	hold.Release()
	synctest.Wait()
	assert.True(t, costly.started.Load() && urgent.started.Load(), "4 permits free")
	costly.Release()
	urgent.Release()
	quiesce(t, e, hh, hc, hu)
}
