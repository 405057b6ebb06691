package httpgc_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
	"github.com/kobe/groupconc/internal/adaptertest"
)

// Each field takes its least value, and the bulkhead takes "unlimited".
func TestAPatchTakesEachFieldsLeastValueAndAnUnlimitedBulkhead(t *testing.T) {
	f := newFixture(t, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	for body, want := range map[string]map[string]any{
		`{"maxConcurrency":1}`:           {"maxConcurrency": 1.0},
		`{"maxInFlight":1}`:              {"maxInFlight": 1.0},
		`{"maxInFlight":"unlimited"}`:    {"maxInFlight": "unlimited"},
		`{"queueThreshold":0}`:           {"queueThreshold": 0.0},
		`{"queueThreshold":"unlimited"}`: {"queueThreshold": "unlimited"},
	} {
		w := patch(f.h, "/api/groups/b", body)
		require.Equal(t, http.StatusOK, w.Code, "%s: %s", body, w.Body.String())
		row := object(t, w)
		for k, v := range want {
			assert.Equal(t, v, row[k], body)
		}
	}

	e := adaptertest.NewExecutor(t, groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare))
	adaptertest.Submit(t, e, "w", adaptertest.OK).Wait()
	h, err := httpgc.New(e, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	w := patch(h, "/api/groups/w", `{"weight":1}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, 1.0, object(t, w)["weight"])
}

// An unknown field is one problem, whatever its value.
func TestAnUnknownFieldIsOneProblem(t *testing.T) {
	f := newFixture(t, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	w := patch(f.h, "/api/groups/b", `{"bogus":"x"}`)
	require.Equal(t, http.StatusUnprocessableEntity, w.Code)
	assert.Equal(t, `unknown field "bogus", want maxConcurrency, maxInFlight, queueThreshold, weight or paused`, object(t, w)["error"])
}

// A shutdown answers with the group's row after it, and its audit
// record has the stats after it and its time.
func TestAShutdownAnswersAndAuditsTheGroupAfterIt(t *testing.T) {
	var events []httpgc.AuditEvent
	f := newFixture(t, httpgc.Options{AllowWrites: true, Authorize: allowAll,
		Audit: func(ev httpgc.AuditEvent) { events = append(events, ev) }})
	w := post(f.h, "/api/groups/a/shutdown", "")
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	row := object(t, w)
	assert.Equal(t, "a", row["group"])
	assert.Equal(t, 2.0, row["maxConcurrency"])
	require.Len(t, events, 1)
	assert.False(t, events[0].At.IsZero(), "the time of the write")
	assert.Equal(t, "a", events[0].After.GroupKey)
	assert.Equal(t, 2, events[0].After.MaxConcurrency)
}

// A group gone between the lookup of its name and the write is 404, as a
// group never known is. Identify runs in between.
func TestAPatchToAGroupEvictedAsItIsWrittenIs404(t *testing.T) {
	var e *groupconc.GroupExecutor
	var once sync.Once
	f := newFixture(t, httpgc.Options{AllowWrites: true, Authorize: allowAll,
		Identify: func(*http.Request) string {
			once.Do(func() { e.EvictGroup("b") })
			return "op"
		}})
	e = f.e
	w := patch(f.h, "/api/groups/b", `{"maxConcurrency":3}`)
	assert.Equal(t, http.StatusNotFound, w.Code, w.Body.String())
	assert.Equal(t, `no group "b"`, object(t, w)["error"])
}

// A refused value's problem says what the field takes.
func TestARefusedValueSaysWhatItsFieldTakes(t *testing.T) {
	f := newFixture(t, httpgc.Options{AllowWrites: true, Authorize: allowAll})
	for body, want := range map[string]string{
		`{"weight":0}`:           `weight: "0" is out of range, want an integer >= 1 or null`,
		`{"maxConcurrency":"x"}`: `maxConcurrency: "\"x\"" is not a value, want an integer >= 1, "unlimited" or null`,
		`{"queueThreshold":-1}`:  `queueThreshold: "-1" is out of range, want an integer >= 0, "unlimited" or null`,
		`{"weight":"unlimited"}`: `weight: "\"unlimited\"" is not a value, want an integer >= 1 or null`,
	} {
		w := patch(f.h, "/api/groups/b", body)
		require.Equal(t, http.StatusUnprocessableEntity, w.Code, body)
		assert.Equal(t, want, object(t, w)["error"], body)
	}
}

// A write whose Identify panics holds up no later write. (net/http
// recovers a handler's panic, so the server goes on serving.)
func TestAPanickingIdentifyHoldsUpNoLaterWrite(t *testing.T) {
	calls := 0
	f := newFixture(t, httpgc.Options{AllowWrites: true, Authorize: allowAll,
		Identify: func(*http.Request) string {
			if calls++; calls == 1 {
				panic("identify failed")
			}
			return "op"
		}})
	assert.PanicsWithValue(t, "identify failed", func() { patch(f.h, "/api/groups/b", `{"maxConcurrency":3}`) })
	w := patch(f.h, "/api/groups/b", `{"maxConcurrency":4}`)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.Equal(t, 4.0, object(t, w)["maxConcurrency"])
	w = post(f.h, "/api/groups/b/shutdown", "")
	assert.Equal(t, http.StatusOK, w.Code, w.Body.String())
}
