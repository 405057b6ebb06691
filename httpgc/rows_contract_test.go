package httpgc_test

import (
	"context"
	"errors"
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

var modes = []groupconc.IsolationMode{groupconc.IsolationOff, groupconc.IsolationFairShare}

// handlerFor returns a handler allowing every write on e.
func handlerFor(t *testing.T, e *groupconc.GroupExecutor) *httpgc.Handler {
	t.Helper()
	h, err := httpgc.New(e, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	return h
}

func TestARowsSourceNamesTheSettingOfEachLimit(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			b := groupconc.NewPolicyBuilder().Isolation(mode).
				ConcurrencyResolver(func(k string) int { return map[string]int{"r": 3}[k] }).
				PerGroupMaxConcurrency(map[string]int{"g": 2}).
				PerGroupMaxInFlight(map[string]int{"g": 7}).
				DefaultQueueThresholdPerGroup(4)
			if mode == groupconc.IsolationFairShare {
				b.PerGroupWeight(map[string]int{"g": 3}).DefaultWeightPerGroup(2)
			}
			e := adaptertest.NewExecutor(t, b)
			for _, k := range []string{"g", "r"} {
				adaptertest.Submit(t, e, k, adaptertest.OK).Wait()
			}
			h := handlerFor(t, e)
			weight := map[bool]string{true: "default", false: "builtin"}[mode == groupconc.IsolationFairShare]
			gWeight := map[bool]string{true: "group", false: "builtin"}[mode == groupconc.IsolationFairShare]
			for group, want := range map[string]map[string]any{
				"g": {"maxConcurrency": "group", "maxInFlight": "group", "queueThreshold": "default", "weight": gWeight},
				"r": {"maxConcurrency": "resolver", "maxInFlight": "builtin", "queueThreshold": "default", "weight": weight},
			} {
				w := get(h, "/api/groups/"+group)
				require.Equal(t, http.StatusOK, w.Code, w.Body.String())
				assert.Equal(t, want, object(t, w)["source"], group)
			}

			body := `{"maxConcurrency":"unlimited","maxInFlight":1,"queueThreshold":0}`
			if mode == groupconc.IsolationFairShare {
				body = `{"maxConcurrency":"unlimited","maxInFlight":1,"queueThreshold":0,"weight":9}`
			}
			w := patch(h, "/api/groups/r", body)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			row := object(t, w)
			want := map[string]any{"maxConcurrency": "override", "maxInFlight": "override", "queueThreshold": "override", "weight": "override"}
			if mode != groupconc.IsolationFairShare {
				want["weight"] = "builtin"
			}
			assert.Equal(t, want, row["source"])
			assert.Equal(t, "unlimited", row["maxConcurrency"])
			assert.Equal(t, 1.0, row["maxInFlight"])
			assert.Equal(t, 0.0, row["queueThreshold"])
			assert.Equal(t, object(t, get(h, "/api/groups/r")), row, "the PATCH answers the row a GET reads")
		})
	}
}

func TestARowCarriesWhereItsTasksWaitAndWhatBecameOfThem(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testRowOutcomes(t, mode) })
		})
	}
}

func testRowOutcomes(t *testing.T, mode groupconc.IsolationMode) {
	e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode).
		DefaultMaxConcurrencyPerGroup(2).DefaultQueueThresholdPerGroup(2).GlobalMaxInFlight(2))
	gate := adaptertest.NewGate(t)
	adaptertest.Submit(t, e, "x", gate.Task)
	adaptertest.Submit(t, e, "y", gate.Task)
	gate.WaitStarted(2)
	time.Sleep(1500 * time.Millisecond) // fake clock: x's task has run 1.5s
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := adaptertest.SubmitCtx(t, ctx, e, "x", adaptertest.OK)
	waiting := adaptertest.Submit(t, e, "x", adaptertest.OK)
	synctest.Wait()
	h := handlerFor(t, e)

	row := object(t, get(h, "/api/groups/x"))
	assert.Equal(t, 1.0, row["running"])
	assert.Equal(t, 2.0, row["waiting"])
	// Off: both wait at the global cap, the first layer. Fair share: a
	// task takes its group's permits first, and x's limit of 2 lets one.
	wantGlobal := map[groupconc.IsolationMode]float64{groupconc.IsolationOff: 2, groupconc.IsolationFairShare: 1}[mode]
	assert.Equal(t, wantGlobal, row["waitingGlobal"])
	assert.Equal(t, 1.0, row["runningCost"])
	assert.Equal(t, 1500.0, row["oldestRunningMs"])
	assert.Equal(t, false, row["paused"])
	assert.Equal(t, "", row["parent"])

	cancel()
	assert.Equal(t, groupconc.StatusCancelled, cancelled.Wait().Status)
	gate.Release()
	assert.Equal(t, groupconc.StatusSuccess, waiting.Wait().Status)
	adaptertest.Submit(t, e, "x", func(context.Context) (int, error) { return 0, errors.New("boom") }).Wait()
	held := adaptertest.NewGate(t)
	last := adaptertest.Submit(t, e, "x", held.Task)
	held.WaitStarted(1)
	w := patch(h, "/api/groups/x", `{"maxConcurrency":1,"queueThreshold":0}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	turned := adaptertest.Submit(t, e, "x", adaptertest.OK)
	require.Equal(t, groupconc.StatusRejected, turned.Wait().Status, "x may run 1 and keep none waiting")
	held.Release()
	last.Wait()
	synctest.Wait()
	row = object(t, get(h, "/api/groups/x"))
	st, _ := e.GroupStats("x")
	for field, want := range map[string]uint64{"succeeded": 3, "failed": 1, "cancelled": 1, "rejected": 1} {
		assert.Equal(t, float64(want), row[field], field)
	}
	assert.Equal(t, map[string]any{"succeeded": float64(st.Succeeded), "failed": float64(st.Failed),
		"cancelled": float64(st.Cancelled), "rejected": float64(st.Rejected)},
		map[string]any{"succeeded": row["succeeded"], "failed": row["failed"], "cancelled": row["cancelled"], "rejected": row["rejected"]},
		"the row's counters are GroupStats'")
	assert.Equal(t, 0.0, row["oldestRunningMs"], "none runs")
	assert.Equal(t, 0.0, row["waitingGlobal"])
}

func TestAChildUnderAPausedParentShowsPaused(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode).ParentSeparator("/"))
			adaptertest.Submit(t, e, "t/a", adaptertest.OK).Wait()
			h := handlerFor(t, e)
			w := patch(h, "/api/groups/t", `{"paused":true}`)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			assert.Equal(t, true, object(t, w)["paused"])

			task := adaptertest.Submit(t, e, "t/a", adaptertest.OK)
			row := rowOf(t, h, "t/a")
			assert.Equal(t, true, row["paused"], "an ancestor is paused")
			assert.Equal(t, "t", row["parent"])
			assert.Equal(t, 1.0, row["waiting"])
			assert.Equal(t, "paused", row["why"])
			assert.Equal(t, "t", row["pausedBy"], "the ancestor to resume")
			assert.NotContains(t, rowOf(t, h, "t"), "pausedBy", "t is paused itself")

			// Paused itself too, the child names no ancestor: its own
			// Resume is the one that counts for it.
			require.Equal(t, http.StatusOK, patch(h, "/api/groups/t%2Fa", `{"paused":true}`).Code)
			assert.NotContains(t, rowOf(t, h, "t/a"), "pausedBy")
			require.Equal(t, http.StatusOK, patch(h, "/api/groups/t%2Fa", `{"paused":false}`).Code)
			assert.Equal(t, "t", rowOf(t, h, "t/a")["pausedBy"])

			w = patch(h, "/api/groups/t", `{"paused":null}`)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			assert.Equal(t, groupconc.StatusSuccess, task.Wait().Status, "resumed, the task runs")
			assert.Equal(t, false, rowOf(t, h, "t/a")["paused"])
			assert.NotContains(t, rowOf(t, h, "t/a"), "pausedBy")
		})
	}
}
