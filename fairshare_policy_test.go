package groupconc_test

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// Fair-share isolation continued: what the mode leaves unchanged, and the
// policy's validation and weight resolution.

// fsTrace runs one fixed scenario under mode, with GlobalMaxInFlight
// Unlimited, and returns everything observable about it but the layer
// order: start order, stats at each step, outcomes and listener events.
func fsTrace(t *testing.T, mode groupconc.IsolationMode) []string {
	var trace []string
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode).
			PerGroupMaxConcurrency(map[string]int{"a": 1, "b": 2}).
			PerGroupMaxInFlight(map[string]int{"a": 2}).
			PerGroupQueueThreshold(map[string]int{"a": 2, "b": 1}).
			TaskLifecycleListener(rec))
		var starts fsStarts
		tasks := map[string]*gatedTask{}
		var hs []*groupconc.TaskHandle[int]
		snap := func(what string) {
			synctest.Wait()
			// GlobalInFlight is left out: it counts the tasks past layer 1,
			// which the mode moves from first to last.
			s := live(e.Stats())
			s.GlobalInFlight = 0
			trace = append(trace, fmt.Sprintf("%s: started %v stats %+v", what, starts.list(), s))
			for _, key := range []string{"a", "b"} {
				if gs, ok := e.GroupStats(key); ok {
					trace = append(trace, fmt.Sprintf("  %+v", gs))
				}
			}
		}
		for i := range 5 {
			for _, key := range []string{"a", "b"} {
				id := fmt.Sprint(key, i)
				tasks[id] = newGatedTask(t, i)
				hs = append(hs, submit(t, t.Context(), e, key, id, starts.task(id, tasks[id])))
				snap("submit " + id)
			}
		}
		for _, id := range []string{"b0", "a0", "b1", "a1", "a2", "b2", "b3", "a3", "a4", "b4"} {
			tasks[id].Release()
			snap("release " + id)
		}
		for _, h := range hs {
			r := h.Wait()
			trace = append(trace, fmt.Sprintf("%s/%s %v %d events %v", r.GroupKey, r.TaskID, r.Status, r.Value, rec.Events(r.GroupKey, r.TaskID)))
		}
		assert.NoError(t, e.Quiescent())
	})
	return trace
}

func TestWithoutAGlobalCapTheIsolationModeChangesNothingObservable(t *testing.T) {
	off := fsTrace(t, groupconc.IsolationOff)
	fair := fsTrace(t, groupconc.IsolationFairShare)
	assert.Equal(t, off, fair, "traces under off (expected) and fair-share (actual)")
	assert.Contains(t, fmt.Sprint(off), "REJECTED", "the scenario should meet the queue thresholds")
}

func TestBuildRejectsInvalidWeightAndIsolationSettings(t *testing.T) {
	fair := func() *groupconc.PolicyBuilder {
		return groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare)
	}
	off := groupconc.NewPolicyBuilder
	for _, c := range []struct {
		name  string
		b     *groupconc.PolicyBuilder
		names []string // the fields the error must name; nil: valid
	}{
		{"per-group weight 0", fair().PerGroupWeight(map[string]int{"a": 0}), []string{"PerGroupWeight"}},
		{"default weight 0", fair().DefaultWeightPerGroup(0), []string{"DefaultWeightPerGroup"}},
		{"negative default weight", fair().DefaultWeightPerGroup(-3), []string{"DefaultWeightPerGroup"}},
		{"per-group weight without fair share", off().PerGroupWeight(map[string]int{"a": 2}), []string{"PerGroupWeight"}},
		{"an empty weight map without fair share", off().PerGroupWeight(map[string]int{}), []string{"PerGroupWeight"}},
		{"weight resolver without fair share", off().WeightResolver(func(string) int { return 2 }), []string{"WeightResolver"}},
		{"default weight 1 without fair share", off().DefaultWeightPerGroup(1), []string{"DefaultWeightPerGroup"}},
		{"global queue threshold under fair share", fair().GlobalQueueThreshold(5), []string{"GlobalQueueThreshold", "Isolation"}},
		{"global queue threshold 0 under fair share", fair().GlobalMaxInFlight(3).GlobalQueueThreshold(0), []string{"GlobalQueueThreshold", "Isolation"}},
		{"unknown isolation mode", off().Isolation(groupconc.IsolationMode(7)), []string{"Isolation"}},
		{"valid: weights under fair share", fair().PerGroupWeight(map[string]int{"a": 3}).WeightResolver(func(string) int { return 2 }).DefaultWeightPerGroup(4), nil},
		{"valid: explicit Unlimited global queue under fair share", fair().GlobalMaxInFlight(3).GlobalQueueThreshold(groupconc.Unlimited), nil},
		{"valid: global queue threshold without fair share", off().GlobalMaxInFlight(3).GlobalQueueThreshold(0), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := c.b.Build()
			if c.names == nil {
				require.NoError(t, err)
				assert.NotNil(t, p)
				return
			}
			require.Error(t, err)
			assert.Nil(t, p)
			assert.ErrorIs(t, err, groupconc.ErrInvalidPolicy)
			for _, n := range c.names {
				assert.Contains(t, err.Error(), n)
			}
		})
	}
}

func TestResolveWeightTriesTheMapThenTheResolverThenTheDefault(t *testing.T) {
	p := mustBuild(t, groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
		PerGroupWeight(map[string]int{"mapped": 5, "both": 6}).
		WeightResolver(func(key string) int {
			switch key {
			case "both":
				return 100
			case "resolved":
				return 7
			case "low":
				return 0
			case "negative":
				return -4
			case "panics":
				panic("weight resolver")
			}
			return 3
		}).
		DefaultWeightPerGroup(9))
	for key, want := range map[string]int{
		"mapped": 5, "both": 6, "resolved": 7, "low": 1, "negative": 1, "panics": 9, "other": 3,
	} {
		assert.Equal(t, want, p.ResolveWeight(key), "ResolveWeight(%q)", key)
	}
	assert.Equal(t, groupconc.IsolationFairShare, p.Isolation())

	q := mustBuild(t, groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).DefaultWeightPerGroup(4))
	assert.Equal(t, 4, q.ResolveWeight("any"), "the default alone")
	assert.Equal(t, 1, groupconc.DefaultPolicy().ResolveWeight("any"), "DefaultPolicy's weight")
	assert.Equal(t, groupconc.IsolationOff, groupconc.DefaultPolicy().Isolation())
	assert.Equal(t, "off", groupconc.IsolationOff.String())
	assert.Equal(t, "fair-share", groupconc.IsolationFairShare.String())
}

func TestFairShareResolvesAGroupsWeightOncePerGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		calls := map[string]int{}
		e := newExecutor(t, groupconc.NewPolicyBuilder().Isolation(groupconc.IsolationFairShare).
			WeightResolver(func(key string) int {
				mu.Lock()
				defer mu.Unlock()
				calls[key]++
				if key == "p" {
					panic("weight")
				}
				return len(key)
			}).DefaultWeightPerGroup(2))
		var hs []*groupconc.TaskHandle[int]
		for i := range 5 {
			for _, key := range []string{"abc", "p"} {
				hs = append(hs, submit(t, t.Context(), e, key, fmt.Sprint(i), succeed))
			}
		}
		quiesce(t, e, hs...)
		assert.Equal(t, 3, groupStats(t, e, "abc").Weight)
		assert.Equal(t, 2, groupStats(t, e, "p").Weight, "a panicking resolver gives the default")
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, map[string]int{"abc": 1, "p": 1}, calls, "resolver calls per group")
	})
}
