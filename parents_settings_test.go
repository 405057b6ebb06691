package groupconc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// With both set, the resolver alone decides at the executor too: its ""
// means no parent, so the separator's parent is never made or limited.
func TestAResolversNoParentWinsOverTheSeparatorInTheExecutor(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").
				ParentResolver(func(k string) string { return map[string]string{"x": "t"}[k] }).
				DefaultMaxConcurrencyPerGroup(5).PerGroupMaxConcurrency(map[string]int{"a": 1, "t": 1}))
			ks, hs := submitEach(t, e, "a/b", "a/c", "x", "x")
			synctest.Wait()
			assert.True(t, ks[0].started.Load() && ks[1].started.Load(), "a's limit of 1 holds no key under it")
			assert.Equal(t, 1, startedCount(ks[2:]...), "x runs under t's limit of 1")
			assert.Empty(t, groupStats(t, e, "a/b").Parent)
			_, ok := e.GroupStats("a")
			assert.False(t, ok, "the separator's parent is never made")
			assert.Equal(t, "t", groupStats(t, e, "x").Parent)
			x, _ := e.ExplainGroup("a/b")
			assert.Nil(t, x.Ancestors)
			assert.Equal(t, 4, e.Stats().Groups, "a/b, a/c, x and t")
			releaseAll(t, e, ks, hs)
		})
	})
}

// A key whose part before its last separator is empty has no parent; a
// key ending in the separator has the part before it.
func TestSeparatorParentsInTheExecutor(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(5).
				PerGroupMaxConcurrency(map[string]int{"/a": 1, "b": 1}))
			ks, hs := submitEach(t, e, "/a/x", "/a/y", "b/", "b/", "/q")
			synctest.Wait()
			assert.Equal(t, 1, startedCount(ks[0], ks[1]), `"/a" limits "/a/x" and "/a/y"`)
			assert.Equal(t, 1, startedCount(ks[2], ks[3]), `"b" limits "b/"`)
			assert.True(t, ks[4].started.Load())
			assert.Equal(t, "/a", groupStats(t, e, "/a/x").Parent)
			assert.Empty(t, groupStats(t, e, "/a").Parent, `"/a" has none`)
			assert.Equal(t, "b", groupStats(t, e, "b/").Parent)
			assert.Empty(t, groupStats(t, e, "/q").Parent)
			_, ok := e.GroupStats("")
			assert.False(t, ok, "no group with an empty key")
			assert.Equal(t, 6, e.Stats().Groups)
			releaseAll(t, e, ks, hs)
		})
	})
}

// A parent's concurrency limit comes from a resolver, a default or an
// override as any group's does, and Explain says which.
func TestAParentsLimitResolvesFromEverySetting(t *testing.T) {
	for name, c := range map[string]struct {
		b      func(groupconc.IsolationMode) *groupconc.PolicyBuilder
		source groupconc.LimitSource
	}{
		"resolver": {func(m groupconc.IsolationMode) *groupconc.PolicyBuilder {
			return modeBuilder(m).PerGroupMaxConcurrency(map[string]int{"acme/u1": 5, "acme/u2": 5}).
				ConcurrencyResolver(func(k string) int { return map[string]int{"acme": 2}[k] })
		}, groupconc.SourceResolver},
		"default": {func(m groupconc.IsolationMode) *groupconc.PolicyBuilder {
			return modeBuilder(m).PerGroupMaxConcurrency(map[string]int{"acme/u1": 5, "acme/u2": 5}).DefaultMaxConcurrencyPerGroup(2)
		}, groupconc.SourceDefault},
	} {
		t.Run(name, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
				synctest.Test(t, func(t *testing.T) {
					p := mustBuild(t, c.b(mode).ParentSeparator("/"))
					assert.Equal(t, c.source, p.Explain("acme").MaxConcurrency.Source, name)
					e := groupconc.New(p)
					defer e.Close()
					ks, hs := submitEach(t, e, "acme/u1", "acme/u1", "acme/u2", "acme/u2")
					synctest.Wait()
					assert.Equal(t, 2, startedCount(ks...), "%s: acme's limit", name)
					st := groupStats(t, e, "acme")
					assert.Equal(t, 2, st.MaxConcurrency, name)
					x, ok := e.ExplainGroup("acme")
					require.True(t, ok)
					assert.Equal(t, c.source, x.MaxConcurrency.Source, name)

					three := 3
					require.NoError(t, e.SetGroupOverride("acme", groupconc.GroupOverride{MaxConcurrency: &three}))
					synctest.Wait()
					assert.Equal(t, 3, startedCount(ks...), "%s: a raised override starts a child's task at once", name)
					x, _ = e.ExplainGroup("acme")
					assert.Equal(t, groupconc.SourceOverride, x.MaxConcurrency.Source, name)
					assert.Equal(t, 3, groupStats(t, e, "acme").MaxConcurrency, name)
					releaseAll(t, e, ks, hs)
				})
			})
		})
	}
}

// A parent's bulkhead bounds its subtree's tasks in flight, in permits.
func TestAParentsBulkheadBoundsItsSubtree(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(5).
				PerGroupMaxInFlight(map[string]int{"acme": 3}))
			big := newGatedTask(t, 0)
			hb := submitGated(t, e, "acme/u1", "", big, groupconc.SubmitOptions{Cost: 2})
			ks, hs := submitEach(t, e, "acme/u2", "acme/u1", "acme")
			synctest.Wait()
			assert.True(t, big.started.Load())
			assert.Equal(t, 1, startedCount(ks...), "3 permits: the cost-2 task and one more")
			assert.True(t, ks[0].started.Load())
			st := groupStats(t, e, "acme")
			assert.Equal(t, 2, st.InFlight, "tasks past acme's bulkhead")
			assert.Equal(t, 2, st.Waiting)
			pos, ok := hs[1].Position()
			require.True(t, ok)
			assert.Equal(t, groupconc.WaitPosition{Limit: "bulkhead", Group: "acme"}, pos)
			big.Release()
			synctest.Wait()
			assert.Equal(t, 3, startedCount(ks...), "the freed 2 permits go to the 2 waiting")
			releaseAll(t, e, append(ks, big), append(hs, hb))
		})
	})
}

// A parent runs tasks of its own, and they share its limit with its
// children's.
func TestAParentRunsTasksOfItsOwnUnderItsLimit(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(2).
				PerGroupMaxConcurrency(map[string]int{"acme": 3}))
			ks, hs := submitEach(t, e, "acme", "acme/u1", "acme/u1", "acme", "acme/u2")
			synctest.Wait()
			assert.Equal(t, 3, startedCount(ks...))
			assert.True(t, ks[0].started.Load() && ks[1].started.Load() && ks[2].started.Load(), "in arrival order")
			st := groupStats(t, e, "acme")
			assert.Equal(t, 3, st.Running)
			assert.Equal(t, 2, st.Waiting)
			ks[0].Release()
			synctest.Wait()
			assert.Equal(t, 3, startedCount(ks[1:]...), "acme's own task or u2's takes the freed permit")
			releaseAll(t, e, ks, hs)
		})
	})
}

// UpdatePolicy changes a parent's limits like any group's: a raised limit
// starts its children's waiting tasks at once, and GroupStats shows it.
func TestUpdatePolicyRaisesAParentsLimit(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			limits := func(acme int) *groupconc.PolicyBuilder {
				return modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(5).
					PerGroupMaxConcurrency(map[string]int{"acme": acme}).PerGroupQueueThreshold(map[string]int{"acme": acme + 1})
			}
			e := newExecutor(t, limits(1))
			ks, hs := submitEach(t, e, "acme/u1", "acme/u2", "acme/u1")
			synctest.Wait()
			require.Equal(t, 1, startedCount(ks...))
			require.NoError(t, e.UpdatePolicy(mustBuild(t, limits(3))))
			synctest.Wait()
			assert.Equal(t, 3, startedCount(ks...))
			st := groupStats(t, e, "acme")
			assert.Equal(t, 3, st.MaxConcurrency)
			assert.Equal(t, 4, st.QueueThreshold)
			releaseAll(t, e, ks, hs)
		})
	})
}

// A group keeps the parent it was made with while it is remembered, though
// the resolver now answers otherwise; made again, it takes the new answer.
func TestAGroupKeepsItsParentUntilItIsForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent := map[string]string{"u": "t1"}
		e := newExecutor(t, builder().ParentResolver(func(k string) string { return parent[k] }).IdleGroupTTL(time.Minute))
		k := newGatedTask(t, 0)
		h := submitGated(t, e, "u", "", k, groupconc.SubmitOptions{})
		synctest.Wait()
		parent = map[string]string{"u": "t2"} // no task runs the resolver now
		h2 := submit(t, context.Background(), e, "u", "second", succeed)
		k.Release()
		quiesce(t, e, h, h2)
		assert.Equal(t, "t1", groupStats(t, e, "u").Parent)
		_, ok := e.GroupStats("t2")
		assert.False(t, ok)
		for range 2 {
			time.Sleep(3 * time.Minute) // fake clock: u, then t1, is forgotten
			e.Stats()
		}
		_, ok = e.GroupStats("t1")
		require.False(t, ok)
		_, err := groupconc.Do(context.Background(), e, "u", succeed, groupconc.SubmitOptions{})
		require.NoError(t, err)
		assert.Equal(t, "t2", groupStats(t, e, "u").Parent)
	})
}
