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

// newTree is an executor whose groups have parents ("acme/bob" is in
// "acme"), held still by a gate, and a handler for it. Concurrency is 2
// for every group but acme, which has 3.
//
//	acme/alice    one task of cost 2, running
//	acme/bob      one task running, one waiting: acme is full (2 + 1)
//	globex/carol  two tasks running, globex is full but nothing waits
//	initech/ops/dave  one task running
//	solo          one task running, no parent
//
// acme's and bob's oldest waits are 2s, in a synctest bubble.
func newTree(t *testing.T, opts httpgc.Options) (*groupconc.GroupExecutor, *httpgc.Handler) {
	t.Helper()
	e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().
		ParentSeparator("/").
		DefaultMaxConcurrencyPerGroup(2).
		PerGroupMaxConcurrency(map[string]int{"acme": 3}).
		GlobalMaxInFlight(64))
	gate := adaptertest.NewGate(t)
	_, err := groupconc.SubmitWith(context.Background(), e, "acme/alice", "alice-1", gate.Task, groupconc.SubmitOptions{Cost: 2})
	require.NoError(t, err)
	adaptertest.Submit(t, e, "acme/bob", gate.Task)
	adaptertest.Submit(t, e, "acme/bob", gate.Task)
	time.Sleep(time.Second)
	for _, key := range []string{"globex/carol", "globex/carol", "initech/ops/dave", "solo"} {
		adaptertest.Submit(t, e, key, gate.Task)
	}
	gate.WaitStarted(6)
	time.Sleep(time.Second)
	h, err := httpgc.New(e, opts)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	return e, h
}

// rowsBy returns the rows of a groups body by group.
func rowsBy(t *testing.T, body map[string]any) map[string]map[string]any {
	t.Helper()
	m := map[string]map[string]any{}
	for _, r := range body["groups"].([]any) {
		m[r.(map[string]any)["group"].(string)] = r.(map[string]any)
	}
	return m
}

func TestRowsCarryTheirParentAndTheCostTheirTasksHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, h := newTree(t, httpgc.Options{})
		w := get(h, "/api/groups")
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		body := object(t, w)
		assert.Equal(t, []string{"acme", "acme/bob", "acme/alice", "globex", "globex/carol", "initech", "initech/ops", "initech/ops/dave", "solo"},
			groupNames(t, body), "a parent's wait covers its subtree, so it comes first")
		rows := rowsBy(t, body)
		for key, want := range map[string]struct {
			parent            string
			running, cost     float64
			waiting, oldestMs float64
			why               string
		}{
			"acme":             {"", 2, 3, 1, 2000, "own limit: concurrency"},
			"acme/alice":       {"acme", 1, 2, 0, 0, ""},
			"acme/bob":         {"acme", 1, 1, 1, 2000, "parent limit: acme"},
			"globex":           {"", 2, 2, 0, 0, ""},
			"globex/carol":     {"globex", 2, 2, 0, 0, ""},
			"initech/ops":      {"initech", 1, 1, 0, 0, ""},
			"initech/ops/dave": {"initech/ops", 1, 1, 0, 0, ""},
			"solo":             {"", 1, 1, 0, 0, ""},
		} {
			r := rows[key]
			require.NotNil(t, r, key)
			got := struct {
				parent            string
				running, cost     float64
				waiting, oldestMs float64
				why               string
			}{r["parent"].(string), r["running"].(float64), r["runningCost"].(float64), r["waiting"].(float64), r["oldestWaitMs"].(float64), r["why"].(string)}
			assert.Equal(t, want, got, key)
		}
		// A row asked for alone finds its ancestors in the executor.
		assert.Equal(t, "parent limit: acme", rowOf(t, h, "acme/bob")["why"])
		assert.Equal(t, "acme", rowOf(t, h, "acme/bob")["parent"])
	})
}

func TestAListOfGroupsCarriesTheAncestorsOfThoseItShows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, h := newTree(t, httpgc.Options{})
		for _, c := range []struct {
			query string
			total float64
			want  []string
		}{
			{"prefix=acme/b", 1, []string{"acme", "acme/bob"}},
			{"prefix=initech/ops/", 1, []string{"initech", "initech/ops", "initech/ops/dave"}},
			{"prefix=initech/ops/&limit=3", 1, []string{"initech", "initech/ops", "initech/ops/dave"}},
			// dave's chain does not fit in 2 rows, so it is left out.
			{"prefix=initech/ops/&limit=2", 1, nil},
			// By key, ops and dave come after initech only.
			{"prefix=initech&sort=key&limit=2", 3, []string{"initech", "initech/ops"}},
			{"sort=running&limit=4", 9, []string{"acme", "globex", "globex/carol", "acme/alice"}},
			{"prefix=s", 1, []string{"solo"}},
		} {
			w := get(h, "/api/groups?"+c.query)
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			body := object(t, w)
			assert.Equal(t, c.want, groupNames(t, body), c.query)
			assert.Equal(t, c.total, body["total"], c.query)
		}
	})
}

func TestTheStreamCarriesEveryShownChildsParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, h := newTree(t, httpgc.Options{Rows: 4, Interval: time.Second})
		c := watch(h, nil)
		defer c.leave()
		synctest.Wait()
		evs, _ := c.rec.events()
		require.NotEmpty(t, evs)
		var snap map[string]any
		require.NoError(t, json.Unmarshal([]byte(evs[0].data), &snap))
		assert.Equal(t, []string{"acme", "acme/bob", "acme/alice", "globex"}, groupNames(t, snap))
		rows := rowsBy(t, snap)
		for key, r := range rows {
			if p := r["parent"].(string); p != "" {
				assert.Contains(t, rows, p, "%s's parent", key)
			}
		}
	})
}

// "alpha" is a child of "zeta". By key alpha comes first, but with its
// parent it does not fit in a list of one. It is left out, and a later
// group whose ancestors fit (zeta, at the top) takes its place: the list
// is not empty while a group would fit.
func TestALaterGroupTakesThePlaceOfOneWhoseAncestorsDoNotFit(t *testing.T) {
	e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().ParentResolver(func(k string) string {
		if k == "alpha" {
			return "zeta"
		}
		return ""
	}))
	g := adaptertest.NewGate(t)
	adaptertest.Submit(t, e, "alpha", g.Task)
	g.WaitStarted(1)
	h, err := httpgc.New(e, httpgc.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	w := get(h, "/api/groups?sort=key&limit=1")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, []string{"zeta"}, groupNames(t, object(t, w)), "body: %s", w.Body)
	w = get(h, "/api/groups?sort=key&limit=2")
	assert.Equal(t, []string{"alpha", "zeta"}, groupNames(t, object(t, w)), "body: %s", w.Body)
}
