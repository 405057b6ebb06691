package httpgc_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// rowOf returns the row of group key from api/groups.
func rowOf(t *testing.T, h http.Handler, key string) map[string]any {
	t.Helper()
	w := get(h, "/api/group?group="+key)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	return object(t, w)
}

func TestEachRowSaysWhyItsTasksWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().
			Isolation(groupconc.IsolationFairShare).
			GlobalMaxInFlight(5).
			PerGroupMaxConcurrency(map[string]int{"hog": 2, "bulk": 2}).
			PerGroupMaxInFlight(map[string]int{"bulk": 1}))
		gate := adaptertest.NewGate(t)
		adaptertest.Submit(t, e, "paused", adaptertest.OK).Wait()
		paused := true
		require.NoError(t, e.SetGroupOverride("paused", groupconc.GroupOverride{Paused: &paused}))
		t.Cleanup(func() { e.SetGroupOverride("paused", groupconc.GroupOverride{}) }) // Shutdown would wait for it
		// The global cap's five permits: hog 2, own 1, bulk 1, long 1.
		for _, key := range []string{"hog", "hog", "own", "own", "bulk", "bulk", "long", "paused"} {
			adaptertest.Submit(t, e, key, gate.Task)
		}
		gate.WaitStarted(5)
		adaptertest.Submit(t, e, "capped", gate.Task)
		h, err := httpgc.New(e, httpgc.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { h.Close() })
		time.Sleep(12 * time.Minute)
		synctest.Wait()

		for key, want := range map[string]string{
			"hog":    "running long: 12 m",
			"own":    "own limit: concurrency",
			"bulk":   "own limit: bulkhead",
			"long":   "running long: 12 m",
			"paused": "paused",
			"capped": "global cap",
		} {
			assert.Equal(t, want, rowOf(t, h, key)["why"], key)
		}
		assert.Equal(t, true, rowOf(t, h, "long")["hung"], "at its limit, running long, nothing finished")
		assert.Equal(t, false, rowOf(t, h, "paused")["hung"])
		// With a longer LongRun, nothing runs long.
		h2, err := httpgc.New(e, httpgc.Options{LongRun: time.Hour})
		require.NoError(t, err)
		t.Cleanup(func() { h2.Close() })
		for key, want := range map[string]string{"hog": "", "own": "own limit: concurrency", "long": ""} {
			assert.Equal(t, want, rowOf(t, h2, key)["why"], key)
		}
	})
}

func TestAHungGroupIsToldApartFromABusyOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().DefaultMaxConcurrencyPerGroup(2))
		gate := adaptertest.NewGate(t)
		adaptertest.Submit(t, e, "hung", gate.Task)
		adaptertest.Submit(t, e, "hung", gate.Task)
		adaptertest.Submit(t, e, "hung", gate.Task)
		// busy runs 100ms tasks, two at a time, and always has more waiting.
		stop := make(chan struct{})
		fed := make(chan struct{})
		go func() {
			defer close(fed)
			tick := time.NewTicker(40 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					groupconc.Submit(context.Background(), e, "busy", "b", adaptertest.Sleeper(100*time.Millisecond))
				}
			}
		}()
		h, err := httpgc.New(e, httpgc.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { h.Close() })
		time.Sleep(90*time.Second + 500*time.Millisecond)
		synctest.Wait()

		hung, busy := rowOf(t, h, "hung"), rowOf(t, h, "busy")
		close(stop)
		<-fed
		assert.Equal(t, "own limit: concurrency", hung["why"], "its third task waits")
		assert.Equal(t, true, hung["hung"])
		assert.Equal(t, 90_500.0, hung["oldestRunningMs"])
		assert.Equal(t, map[string]any{"seconds": 60.0, "succeeded": 0.0, "failed": 0.0, "cancelled": 0.0, "rejected": 0.0}, hung["recent"],
			"a minute back, as far as 60 samples a second apart reach")

		assert.Equal(t, "own limit: concurrency", busy["why"])
		assert.Equal(t, false, busy["hung"])
		recent := busy["recent"].(map[string]any)
		assert.Equal(t, 60.0, recent["seconds"])
		assert.InDelta(t, 1190, recent["succeeded"], 30, "two 100ms tasks at a time finish 20 a second")
		assert.Less(t, busy["oldestRunningMs"], 100.0)
		assert.Len(t, busy["history"], 60, "a sample a second for a minute")
	})
}

func TestPausingThroughAPatchHoldsTheGroupsTasks(t *testing.T) {
	f, events := writable(t)
	w := patch(f.h, "/api/group?group=c", `{"paused":true}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	row := object(t, w)
	assert.Equal(t, true, row["paused"])
	assert.Equal(t, "paused", row["why"])
	st, _ := f.e.GroupStats("c")
	assert.True(t, st.Paused)

	require.Equal(t, http.StatusOK, patch(f.h, "/api/groups/c", `{"paused":false,"maxConcurrency":2}`).Code)
	f.gate.WaitStarted(1) // c's waiting task starts once resumed
	st, _ = f.e.GroupStats("c")
	assert.False(t, st.Paused)
	assert.Equal(t, 2, st.Running)
	require.Len(t, *events, 2)
	assert.Equal(t, true, *(*events)[0].OverrideAfter.Paused)
	assert.Equal(t, false, *(*events)[1].OverrideAfter.Paused)
}

func TestTheHistoryIsBoundedInSamplesAndGroups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder())
		h, err := httpgc.New(e, httpgc.Options{Rows: 2, History: 5})
		require.NoError(t, err)
		t.Cleanup(func() { h.Close() })
		// Each group in turn has a task waiting for a second and a half,
		// so the snapshot shows that group alone: the others are idle.
		keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
		showInTurn(t, e, keys)
		time.Sleep(10 * time.Second)
		var kept []string
		for _, key := range keys {
			n := len(rowOf(t, h, key)["history"].([]any))
			assert.LessOrEqual(t, n, 5, key)
			if n > 0 {
				kept = append(kept, key)
			}
		}
		assert.Equal(t, []string{"e", "f", "g", "h"}, kept, "twice Rows groups, those shown last")

		c := watch(h, nil)
		synctest.Wait()
		c.leave()
		evs, _ := c.rec.events()
		require.NotEmpty(t, evs)
		var snap struct {
			History struct {
				IntervalMs       int64
				Waiting, Running []int
			}
		}
		require.NoError(t, json.Unmarshal([]byte(evs[0].data), &snap))
		assert.Equal(t, int64(1000), snap.History.IntervalMs)
		assert.Len(t, snap.History.Waiting, 5, "the totals' history comes with the first snapshot")
		assert.Len(t, snap.History.Running, 5)
	})
}

func TestANegativeHistoryKeepsNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, httpgc.Options{History: -1, LongRun: time.Second})
		time.Sleep(5 * time.Second)
		row := rowOf(t, f.h, "a")
		assert.Equal(t, []any{}, row["history"])
		assert.Nil(t, row["recent"])
		assert.Equal(t, "own limit: concurrency", row["why"])
		assert.Equal(t, false, row["hung"], "without a history nothing is told hung")
	})
}

// Under fair share a task holds its tenant's permit while it waits for a
// global one. A sibling that waits for that permit waits on the global
// cap: its row says so, not "own limit", though no limit on its path is
// held by running tasks.
func TestARowWhoseAncestorsPermitWaitsForTheGlobalCapSaysGlobalCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().
			Isolation(groupconc.IsolationFairShare).GlobalMaxInFlight(1).ParentSeparator("/").
			PerGroupMaxConcurrency(map[string]int{"t": 1}).DefaultMaxConcurrencyPerGroup(10))
		gate := adaptertest.NewGate(t)
		adaptertest.Submit(t, e, "x", gate.Task) // holds the global permit
		gate.WaitStarted(1)
		adaptertest.Submit(t, e, "t/u", gate.Task) // takes t's permit, waits for a global one
		synctest.Wait()
		adaptertest.Submit(t, e, "t/v", gate.Task) // waits for t's permit
		synctest.Wait()
		h, err := httpgc.New(e, httpgc.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { h.Close() })
		for key, want := range map[string]string{"t": "global cap", "t/u": "global cap", "t/v": "global cap"} {
			assert.Equal(t, want, rowOf(t, h, key)["why"], key)
		}
	})
}

// Under IsolationOff a task takes its global permit first. A costly task
// that waits at its own limit, while a sibling waits for a global permit,
// waits on its own limit: its row says so, not "global cap", which would
// point at a knob that starts nothing.
func TestUnderIsolationOffARowWaitingAtItsOwnLimitSaysOwnLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().ParentSeparator("/").
			GlobalMaxInFlight(4).DefaultMaxConcurrencyPerGroup(10).
			PerGroupMaxConcurrency(map[string]int{"t/u2": 2}))
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		block := func(context.Context) (int, error) { <-release; return 0, nil }
		sub := func(key string, cost int) *groupconc.TaskHandle[int] {
			h, err := groupconc.SubmitWith(context.Background(), e, key, key, block, groupconc.SubmitOptions{Cost: cost})
			require.NoError(t, err)
			synctest.Wait()
			return h
		}
		sub("x", 1)
		sub("t/u2", 1)
		costly := sub("t/u2", 2) // takes the last 2 global permits, waits at u2's own limit
		sub("t/u1", 1)           // waits for a global permit
		pos, ok := costly.Position()
		require.True(t, ok)
		require.Equal(t, "t/u2", pos.Group)
		require.NotEqual(t, "global", pos.Limit)
		h, err := httpgc.New(e, httpgc.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { h.Close() })
		assert.Equal(t, "own limit", rowOf(t, h, "t/u2")["why"]) // a costly head, 1 of 2 free
		assert.Equal(t, "global cap", rowOf(t, h, "t/u1")["why"])
	})
}
