package httpgc_test

import (
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
)

// writable returns a fixture whose handler allows every write and records
// its audit events.
func writable(t *testing.T) (*fixture, *[]httpgc.AuditEvent) {
	var mu sync.Mutex
	var events []httpgc.AuditEvent
	f := newFixture(t, httpgc.Options{AllowWrites: true, Authorize: allowAll,
		Identify: func(*http.Request) string { return "alice" },
		Audit: func(ev httpgc.AuditEvent) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, ev)
		}})
	return f, &events
}

func intp(n int) *int { return &n }

func TestAPatchSetsOneOverrideAndDropsAnother(t *testing.T) {
	f, events := writable(t)
	w := patch(f.h, "/api/groups/b", `{"maxConcurrency":2,"queueThreshold":"unlimited"}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	row := object(t, w)
	assert.Equal(t, rowKeys, keys(row), "the response is the new row")
	assert.Equal(t, 2.0, row["maxConcurrency"])
	assert.Equal(t, "unlimited", row["queueThreshold"])
	assert.Equal(t, map[string]any{"maxConcurrency": "override", "maxInFlight": "builtin", "queueThreshold": "override", "weight": "builtin"}, row["source"])
	st, _ := f.e.GroupStats("b")
	assert.Equal(t, 2, st.MaxConcurrency)
	assert.Equal(t, groupconc.Unlimited, st.QueueThreshold)

	w = patch(f.h, "/api/groups/b", `{"queueThreshold":null}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	row = object(t, w)
	assert.Equal(t, 2.0, row["maxConcurrency"], "an absent field is left as it is")
	assert.Equal(t, 10.0, row["queueThreshold"], "null goes back to what the policy resolves")
	assert.Equal(t, "default", row["source"].(map[string]any)["queueThreshold"])
	o, _ := f.e.GroupOverride("b")
	assert.Equal(t, groupconc.GroupOverride{MaxConcurrency: intp(2)}, o)

	w = patch(f.h, "/api/groups/b", `{"maxConcurrency":null}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, "builtin", object(t, w)["source"].(map[string]any)["maxConcurrency"])
	_, overridden := f.e.GroupOverride("b")
	assert.False(t, overridden, "dropping every override leaves none")

	require.Len(t, *events, 3)
	ev := (*events)[0]
	assert.Equal(t, httpgc.ActionPatch, ev.Action)
	assert.Equal(t, "alice", ev.Who)
	assert.Equal(t, "b", ev.Group)
	assert.Equal(t, 1, ev.Before.MaxConcurrency)
	assert.Equal(t, 2, ev.After.MaxConcurrency)
	assert.Equal(t, groupconc.GroupOverride{}, ev.OverrideBefore)
	assert.Equal(t, groupconc.GroupOverride{MaxConcurrency: intp(2), QueueThreshold: intp(groupconc.Unlimited)}, ev.OverrideAfter)
	assert.NoError(t, ev.Err)
	assert.False(t, ev.At.IsZero())
}

func TestABadPatchGets422NamingItAndChangesNothing(t *testing.T) {
	f, events := writable(t)
	require.Equal(t, http.StatusOK, patch(f.h, "/api/groups/a", `{"maxInFlight":20}`).Code)
	*events = nil
	for body, want := range map[string]string{
		`{"maxConcurency":3}`:                      `"maxConcurency"`,
		`{"maxConcurrency":0}`:                     "maxConcurrency",
		`{"maxConcurrency":-1}`:                    "maxConcurrency",
		`{"maxConcurrency":2.5}`:                   "maxConcurrency",
		`{"maxConcurrency":"3"}`:                   "maxConcurrency",
		`{"maxConcurrency":true}`:                  "maxConcurrency",
		`{"maxConcurrency":1e30}`:                  "maxConcurrency",
		`{"maxInFlight":0}`:                        "maxInFlight",
		`{"queueThreshold":-1}`:                    "queueThreshold",
		`{"weight":"unlimited"}`:                   "weight",
		`{"weight":0}`:                             "weight",
		`{"maxConcurrency":3,"queueThreshold":-1}`: "queueThreshold",
		`[]`:   "object",
		`null`: "object",
		`7`:    "object",
	} {
		w := patch(f.h, "/api/groups/a", body)
		assert.Equal(t, http.StatusUnprocessableEntity, w.Code, body)
		assert.Contains(t, object(t, w)["error"], want, body)
	}
	st, _ := f.e.GroupStats("a")
	assert.Equal(t, 2, st.MaxConcurrency, "nothing changed")
	assert.Equal(t, 10, st.QueueThreshold, "nothing changed")
	o, _ := f.e.GroupOverride("a")
	assert.Equal(t, groupconc.GroupOverride{MaxInFlight: intp(20)}, o, "nothing changed")
	require.Len(t, *events, 15, "every refused patch is audited")
	for _, ev := range *events {
		assert.Equal(t, http.StatusUnprocessableEntity, ev.Status)
		assert.ErrorIs(t, ev.Err, httpgc.ErrRefused)
		assert.NotEmpty(t, ev.Refused)
		assert.Equal(t, "a", ev.Name)
		assert.Empty(t, ev.Group, "a refused patch never reaches the executor")
	}
}

func TestAValueTheExecutorRefusesGets422AndIsAudited(t *testing.T) {
	f, events := writable(t)
	w := patch(f.h, "/api/groups/a", `{"maxConcurrency":3,"weight":2}`)
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code)
	assert.Contains(t, object(t, w)["error"], "Weight", "a weight needs fair share")
	st, _ := f.e.GroupStats("a")
	assert.Equal(t, 2, st.MaxConcurrency, "nothing changed")
	require.Len(t, *events, 1)
	assert.ErrorIs(t, (*events)[0].Err, groupconc.ErrInvalidPolicy)
	assert.Equal(t, (*events)[0].Before.MaxConcurrency, (*events)[0].After.MaxConcurrency)
}

func TestAMalformedPatchGets400(t *testing.T) {
	f, _ := writable(t)
	for _, body := range []string{``, `{`, `{"maxConcurrency":2}{}`, `{"maxConcurrency":}`} {
		assert.Equal(t, http.StatusBadRequest, patch(f.h, "/api/groups/a", body).Code, body)
	}
}

func TestAPatchOfAnUnknownGroupGets404AndCreatesNothing(t *testing.T) {
	f, _ := writable(t)
	w := patch(f.h, "/api/groups/nope", `{"maxConcurrency":2}`)
	assert.Equal(t, http.StatusNotFound, w.Code)
	_, ok := f.e.GroupStats("nope")
	assert.False(t, ok)
	_, ok = f.e.GroupOverride("nope")
	assert.False(t, ok)
}

func TestARaisedLimitStartsWaitingTasks(t *testing.T) {
	f, _ := writable(t)
	require.Equal(t, http.StatusOK, patch(f.h, "/api/groups/c", `{"maxConcurrency":2}`).Code)
	f.gate.WaitStarted(1) // c's waiting task
	st, _ := f.e.GroupStats("c")
	assert.Equal(t, 2, st.Running)
	assert.Equal(t, 0, st.Waiting)
}

func TestEvictForgetsTheGroup(t *testing.T) {
	f, events := writable(t)
	w := post(f.h, "/api/groups/c/evict", "")
	assert.Equal(t, http.StatusNoContent, w.Code, w.Body.String())
	_, ok := f.e.GroupStats("c")
	assert.False(t, ok)
	assert.Equal(t, http.StatusNotFound, get(f.h, "/api/groups/c").Code)
	assert.Equal(t, http.StatusNotFound, post(f.h, "/api/groups/c/evict", "{}").Code)
	require.Len(t, *events, 2)
	assert.Equal(t, httpgc.ActionEvict, (*events)[0].Action)
	assert.Equal(t, 2, (*events)[0].Before.InFlight)
	assert.Equal(t, groupconc.GroupStats{}, (*events)[0].After)
	assert.Equal(t, http.StatusNoContent, (*events)[0].Status)
	assert.Equal(t, `no group "c"`, (*events)[1].Refused, "the second evict finds no group")
	assert.Equal(t, http.StatusNotFound, (*events)[1].Status)
}

func TestShutdownCancelsTheGroupsTasksAndKeepsIt(t *testing.T) {
	f, events := writable(t)
	w := post(f.h, "/api/groups/a/shutdown", "{}")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, "a", object(t, w)["group"])
	r := f.tasks[3].Wait() // a's waiting task
	assert.Equal(t, groupconc.StatusCancelled, r.Status)
	assert.ErrorIs(t, r.Err, groupconc.ErrGroupShutdown)
	st, ok := f.e.GroupStats("a")
	require.True(t, ok, "the group stays")
	assert.Equal(t, 0, st.Waiting)
	require.Len(t, *events, 1)
	assert.Equal(t, httpgc.ActionShutdown, (*events)[0].Action)
}

func TestEvictAndShutdownTakeNoFields(t *testing.T) {
	f, _ := writable(t)
	w := post(f.h, "/api/groups/a/evict", `{"force":true}`)
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code)
	assert.Contains(t, object(t, w)["error"], `"force"`)
	assert.Equal(t, http.StatusUnprocessableEntity, post(f.h, "/api/groups/a/shutdown", `[1]`).Code)
	assert.Equal(t, 3, f.e.Stats().Groups)
}

func TestAWriteTheExecutorRefusesIsAudited(t *testing.T) {
	f, events := writable(t)
	require.NoError(t, f.e.Close())
	w := patch(f.h, "/api/groups/a", `{"maxConcurrency":3}`)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code, w.Body.String())
	require.Len(t, *events, 1)
	assert.True(t, errors.Is((*events)[0].Err, groupconc.ErrClosed), "got %v", (*events)[0].Err)
}

func TestConcurrentPatchesOfDifferentFieldsBothHold(t *testing.T) {
	f, _ := writable(t)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { patch(f.h, "/api/groups/b", `{"maxInFlight":7}`) })
		wg.Go(func() { patch(f.h, "/api/groups/b", `{"queueThreshold":3}`) })
	}
	wg.Wait()
	o, _ := f.e.GroupOverride("b")
	assert.Equal(t, groupconc.GroupOverride{MaxInFlight: intp(7), QueueThreshold: intp(3)}, o)
}

func TestAPatchPausesAndResumesAGroup(t *testing.T) {
	f, _ := writable(t)
	w := patch(f.h, "/api/groups/b", `{"paused":true}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, true, object(t, w)["paused"])
	st, _ := f.e.GroupStats("b")
	assert.True(t, st.Paused)

	w = patch(f.h, "/api/groups/b", `{"paused":"yes"}`)
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code)
	assert.Contains(t, w.Body.String(), "paused")

	w = patch(f.h, "/api/groups/b", `{"paused":null}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, false, object(t, w)["paused"])
	_, overridden := f.e.GroupOverride("b")
	assert.False(t, overridden, "null drops the pause")
}

// A repeated field could hide a bad value behind a good one, since a JSON
// decoder keeps the last. So a field given twice is refused, naming it.
func TestARepeatedFieldGets422NamingItAndChangesNothing(t *testing.T) {
	f, events := writable(t)
	t.Cleanup(func() { f.e.SetGroupOverride("a", groupconc.GroupOverride{}) }) // Shutdown would wait for a pause
	for body, want := range map[string]string{
		`{"maxConcurrency":"lots","maxConcurrency":3}`: `"maxConcurrency"`,
		`{"maxConcurrency":0,"maxConcurrency":3}`:      `"maxConcurrency"`,
		`{"paused":"yes","paused":false}`:              `"paused"`,
		`{"paused":true,"p\u0061used":true}`:           `"paused"`,
		`{"nope":1,"nope":2}`:                          `"nope"`,
	} {
		w := patch(f.h, "/api/groups/a", body)
		assert.Equal(t, http.StatusUnprocessableEntity, w.Code, body)
		assert.Contains(t, object(t, w)["error"], want, body)
	}
	w := post(f.h, "/api/groups/a/shutdown", `{"x":1,"x":1}`)
	assert.Equal(t, http.StatusUnprocessableEntity, w.Code)
	o, has := f.e.GroupOverride("a")
	assert.False(t, has, "nothing changed: %+v", o)
	st, _ := f.e.GroupStats("a")
	assert.Equal(t, 2, st.Running, "nothing changed")
	require.Len(t, *events, 6, "every refused write is audited")
}

// A PATCH body is one JSON object and only whitespace after it.
func TestAnythingAfterThePatchObjectGets400AndChangesNothing(t *testing.T) {
	f, _ := writable(t)
	t.Cleanup(func() { f.e.SetGroupOverride("a", groupconc.GroupOverride{}) }) // Shutdown would wait for a pause
	for _, body := range []string{`{"paused":true}]`, `{"paused":true}}`, `{"paused":true}]garbage{"x":`,
		`{"paused":true} ] ]`, `{"paused":true}{}`, `{"paused":true},`, "{\"paused\":true}\v"} {
		assert.Equal(t, http.StatusBadRequest, patch(f.h, "/api/groups/a", body).Code, "%q", body)
	}
	assert.Equal(t, http.StatusBadRequest, post(f.h, "/api/groups/a/evict", `{}]`).Code)
	_, has := f.e.GroupOverride("a")
	assert.False(t, has, "nothing changed")
	_, ok := f.e.GroupStats("a")
	assert.True(t, ok, "not evicted")
	w := patch(f.h, "/api/groups/a", "\r\n\t {\"paused\":null} \r\n\t ")
	assert.Equal(t, http.StatusOK, w.Code, "JSON whitespace around the object: %s", w.Body)
}
