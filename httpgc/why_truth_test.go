package httpgc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
	"github.com/kobe/groupconc/httpgc"
)

// whyModes runs f in a bubble per isolation mode.
func whyModes(t *testing.T, f func(t *testing.T, mode groupconc.IsolationMode)) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { f(t, mode) })
		})
	}
}

// whyExecutor returns an executor of b whose tasks wait for release, and
// a handler for it. Cleanup releases them.
func whyExecutor(t *testing.T, b *groupconc.PolicyBuilder) (*groupconc.GroupExecutor, *httpgc.Handler, groupconc.Task[int]) {
	t.Helper()
	p, err := b.Build()
	require.NoError(t, err)
	e := groupconc.New(p)
	release := make(chan struct{})
	t.Cleanup(func() {
		close(release)
		require.NoError(t, e.Shutdown(context.Background()))
	})
	h, err := httpgc.New(e, httpgc.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	return e, h, func(context.Context) (int, error) { <-release; return 0, nil }
}

// A full bulkhead holds back only the tasks that have not passed it. With
// every waiting task past it, they wait for a concurrency limit: the
// row names that one, as Position does. Raising the bulkhead would start
// nothing.
func TestARowWhoseWaitingTasksArePastAFullBulkheadNamesTheConcurrency(t *testing.T) {
	whyModes(t, func(t *testing.T, mode groupconc.IsolationMode) {
		e, h, work := whyExecutor(t, groupconc.NewPolicyBuilder().Isolation(mode).ParentSeparator("/").
			PerGroupMaxConcurrency(map[string]int{"g": 1, "a": 1}).DefaultMaxConcurrencyPerGroup(5).
			PerGroupMaxInFlight(map[string]int{"g": 2, "a/b": 2}))
		sub := func(key string) *groupconc.TaskHandle[int] {
			hd, err := groupconc.Submit(context.Background(), e, key, key, work)
			require.NoError(t, err)
			synctest.Wait()
			return hd
		}
		sub("g")
		g2 := sub("g") // in flight: g's bulkhead of 2 is full, its concurrency of 1 too
		sub("a/e")     // holds a's concurrency
		abc := sub("a/b/c")
		sub("a/b/c") // a/b's bulkhead of 2 is full; both wait for a's concurrency
		for _, c := range []struct {
			h          *groupconc.TaskHandle[int]
			limit, grp string
		}{{g2, "concurrency", "g"}, {abc, "concurrency", "a"}} {
			pos, ok := c.h.Position()
			require.True(t, ok)
			require.Equal(t, c.limit, pos.Limit)
			require.Equal(t, c.grp, pos.Group)
		}
		assert.Equal(t, "own limit: concurrency", rowOf(t, h, "g")["why"])
		assert.Equal(t, "parent limit: a", rowOf(t, h, "a/b/c")["why"])
	})
}

// A caller blocked on a full queue waits as a task does, though it is in
// Blocked, not Waiting. Its row says what holds it back: its group's
// limit, its parent's, or the global cap. It never says nothing waits.
func TestARowWithOnlyBlockedCallersSaysWhyTheyWait(t *testing.T) {
	whyModes(t, func(t *testing.T, mode groupconc.IsolationMode) {
		b := groupconc.NewPolicyBuilder().Isolation(mode).ParentSeparator("/").GlobalMaxInFlight(3).
			PerGroupMaxConcurrency(map[string]int{"z": 1, "t": 1}).DefaultMaxConcurrencyPerGroup(5).
			DefaultQueueThresholdPerGroup(0)
		if mode == groupconc.IsolationOff {
			b.GlobalQueueThreshold(0)
		}
		e, h, work := whyExecutor(t, b)
		blocked := func(key string) {
			go func() {
				hd, err := groupconc.SubmitWith(context.Background(), e, key, key, work, groupconc.SubmitOptions{Block: true})
				if err == nil {
					hd.Wait()
				}
			}()
			synctest.Wait()
		}
		for _, key := range []string{"z", "t/u", "x"} { // the global cap of 3 is full
			_, err := groupconc.Submit(context.Background(), e, key, key, work)
			require.NoError(t, err)
		}
		synctest.Wait()
		blocked("z")
		blocked("t/v")
		blocked("g")
		for key, want := range map[string]string{"z": "own limit: concurrency", "t/v": "parent limit: t", "g": "global cap"} {
			st, ok := e.GroupStats(key)
			require.True(t, ok)
			require.Equal(t, [2]int{0, 1}, [2]int{st.Waiting, st.Blocked}, key)
			assert.Equal(t, want, rowOf(t, h, key)["why"], key)
		}
	})
}
