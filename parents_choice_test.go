package groupconc_test

import (
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kobe/groupconc"
)

// flow is a set of gated tasks whose ends the test drives one at a time.
type flow struct {
	keys []string
	ks   []*gatedTask
	hs   []*groupconc.TaskHandle[int]
	done []bool
}

// newFlow submits one gated task to each key in order, with opts.
func newFlow(t *testing.T, e *groupconc.GroupExecutor, opts []groupconc.SubmitOptions, keys ...string) *flow {
	t.Helper()
	f := &flow{keys: keys, done: make([]bool, len(keys))}
	for i, key := range keys {
		k := newGatedTask(t, i)
		var o groupconc.SubmitOptions
		if i < len(opts) {
			o = opts[i]
		}
		f.ks = append(f.ks, k)
		f.hs = append(f.hs, submitGated(t, e, key, "", k, o))
	}
	return f
}

// endOldest ends the running task submitted first, and reports its index.
func (f *flow) endOldest() int {
	for i, k := range f.ks {
		if k.started.Load() && !f.done[i] {
			f.done[i] = true
			k.Release()
			synctest.Wait()
			return i
		}
	}
	return -1
}

// running counts the running tasks by key.
func (f *flow) running() map[string]int {
	m := map[string]int{}
	for i, k := range f.ks {
		if k.started.Load() && !f.done[i] {
			m[f.keys[i]]++
		}
	}
	return m
}

// finish ends every task and checks every permit is back.
func (f *flow) finish(t *testing.T, e *groupconc.GroupExecutor) {
	t.Helper()
	releaseAll(t, e, f.ks, f.hs)
}

func repeat(key string, n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = key
	}
	return ks
}

// Under fair share, a parent's limit is shared among its children by
// weight: u1 of weight 2 holds two of acme's 3 permits, u2 of weight 1
// one, whoever came first.
func TestAParentsLimitIsSharedByTheChildrensWeights(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().Isolation(groupconc.IsolationFairShare).ParentSeparator("/").
			DefaultMaxConcurrencyPerGroup(10).PerGroupMaxConcurrency(map[string]int{"acme": 3}).
			PerGroupWeight(map[string]int{"acme/u1": 2}))
		f := newFlow(t, e, nil, append(repeat("acme/u1", 8), repeat("acme/u2", 8)...)...)
		synctest.Wait()
		require.Equal(t, map[string]int{"acme/u1": 3}, f.running())
		for range 6 {
			f.endOldest()
			r := f.running()
			assert.Equal(t, 3, r["acme/u1"]+r["acme/u2"], "acme's limit is used")
		}
		assert.Equal(t, map[string]int{"acme/u1": 2, "acme/u2": 1}, f.running())
		f.finish(t, e)
	})
}

// A parent's own tasks take their turn as a child would, under fair share,
// at its limit and at the global cap: a child's backlog does not hold them
// back until it drains.
func TestAParentsOwnTasksTakeTheirTurnAtItsLimit(t *testing.T) {
	for name, b := range map[string]*groupconc.PolicyBuilder{
		"acme's limit": builder().PerGroupMaxConcurrency(map[string]int{"acme": 2}),
		"global cap":   builder().GlobalMaxInFlight(2),
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, b.Isolation(groupconc.IsolationFairShare).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(10))
				f := newFlow(t, e, nil, append(repeat("acme/u1", 6), repeat("acme", 3)...)...)
				synctest.Wait()
				require.Equal(t, map[string]int{"acme/u1": 2}, f.running())
				f.endOldest()
				assert.Equal(t, map[string]int{"acme/u1": 1, "acme": 1}, f.running(), "acme's own task, running none, comes first")
				f.endOldest()
				assert.Equal(t, map[string]int{"acme/u1": 1, "acme": 1}, f.running())
				f.finish(t, e)
			})
		})
	}
}

// Under IsolationOff the children's tasks waiting for their parent's limit
// start in arrival order, whatever the weights.
func TestAParentsLimitServesChildrenInArrivalOrderUnderIsolationOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().ParentSeparator("/").
			DefaultMaxConcurrencyPerGroup(10).PerGroupMaxConcurrency(map[string]int{"acme": 1}))
		keys := []string{"acme/u1", "acme/u1", "acme/u2", "acme", "acme/u1", "acme/u3", "acme/u2"}
		f := newFlow(t, e, nil, keys...)
		synctest.Wait()
		var order []int
		for range keys {
			order = append(order, f.endOldest())
		}
		assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6}, order)
		f.finish(t, e)
	})
}

// A costly task waiting for its parent's limit is not overtaken by cheaper
// tasks of a sibling: the permits freed one by one stay free until it
// starts, in both modes.
func TestACostlyTaskAtAParentsLimitIsNotOvertaken(t *testing.T) {
	forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
		synctest.Test(t, func(t *testing.T) {
			e := newExecutor(t, builder().Isolation(mode).ParentSeparator("/").
				DefaultMaxConcurrencyPerGroup(10).PerGroupMaxConcurrency(map[string]int{"acme": 4}))
			opts := []groupconc.SubmitOptions{4: {Cost: 3}}
			keys := append(repeat("acme/u2", 4), "acme/u1")
			keys = append(keys, repeat("acme/u2", 3)...)
			f := newFlow(t, e, opts, keys...)
			synctest.Wait()
			require.Equal(t, map[string]int{"acme/u2": 4}, f.running())
			for range 2 {
				f.endOldest()
				assert.Equal(t, 0, f.running()["acme/u1"])
				assert.Less(t, f.running()["acme/u2"], 4, "a freed permit is kept for the costly task")
			}
			f.endOldest()
			assert.Equal(t, map[string]int{"acme/u1": 1, "acme/u2": 1}, f.running())
			assert.Equal(t, 4, groupStats(t, e, "acme").RunningCost)
			f.finish(t, e)
		})
	})
}

// A costly task that finds its parent's limit with a permit free, but not
// enough, is the fair choice from then on: a cheaper task of the parent
// (or of a sibling) that comes later waits behind it, through a change of
// limits that changes nothing too. Under fair share the choice used to be
// made only when permits were next handed on, by a release or a change,
// and then fell on the later task.
func TestACostlyTaskFindingTooFewPermitsAtAParentsLimitStaysChosen(t *testing.T) {
	for _, later := range []string{"acme", "acme/u3"} {
		t.Run(later, func(t *testing.T) {
			forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
				synctest.Test(t, func(t *testing.T) {
					b := modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(10).
						PerGroupMaxConcurrency(map[string]int{"acme": 4})
					e := newExecutor(t, b)
					opts := []groupconc.SubmitOptions{1: {Cost: 2}, 2: {Cost: 2}}
					f := newFlow(t, e, opts, "acme/u2", "acme/u1", "acme/u2", later)
					synctest.Wait()
					require.Equal(t, map[string]int{"acme/u2": 1, "acme/u1": 1}, f.running(), "3 of 4 permits held")
					require.NoError(t, e.UpdatePolicy(mustBuild(t, b)))
					synctest.Wait()
					assert.Equal(t, map[string]int{"acme/u2": 1, "acme/u1": 1}, f.running(), "the costly task was first")
					f.endOldest()
					assert.Equal(t, map[string]int{"acme/u2": 1, "acme/u1": 1}, f.running(), "2 permits free: the costly task starts")
					assert.Equal(t, 4, groupStats(t, e, "acme").RunningCost)
					f.finish(t, e)
				})
			})
		})
	}
}

// The contract's example, in every order of arrival and with a global
// cap: tenant limit 3, user limits 2, three tasks of u1 and one of u2 run
// 3 at once, and again once one of them ends.
func TestThreeOfU1AndOneOfU2RunThreeAtOnceInAnyOrder(t *testing.T) {
	for _, keys := range [][]string{
		{"t/u1", "t/u1", "t/u1", "t/u2"},
		{"t/u2", "t/u1", "t/u1", "t/u1"},
		{"t/u1", "t/u2", "t/u1", "t/u1"},
		{"t/u1", "t/u1", "t/u2", "t/u1"},
	} {
		forEachMode(t, func(t *testing.T, mode groupconc.IsolationMode) {
			synctest.Test(t, func(t *testing.T) {
				e := newExecutor(t, modeBuilder(mode).ParentSeparator("/").DefaultMaxConcurrencyPerGroup(2).
					PerGroupMaxConcurrency(map[string]int{"t": 3}))
				f := newFlow(t, e, nil, keys...)
				synctest.Wait()
				assert.Equal(t, map[string]int{"t/u1": 2, "t/u2": 1}, f.running(), "%v", keys)
				st := groupStats(t, e, "t")
				assert.Equal(t, [2]int{3, 1}, [2]int{st.Running, st.Waiting}, "%v", keys)
				for i, key := range keys {
					if key == "t/u1" && f.ks[i].started.Load() {
						f.done[i] = true
						f.ks[i].Release()
						break
					}
				}
				synctest.Wait()
				assert.Equal(t, map[string]int{"t/u1": 2, "t/u2": 1}, f.running(), "%v: u1's third starts", keys)
				f.finish(t, e)
			})
		})
	}
}

// Under IsolationOff the global line stays first come, first served,
// whatever the tenants and users of the tasks in it.
func TestTheGlobalLineIsFirstComeFirstServedUnderIsolationOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().ParentSeparator("/").GlobalMaxInFlight(1).DefaultMaxConcurrencyPerGroup(10))
		keys := []string{"a/u1", "b/u1", "a/u1", "a/u2", "b/u1", "a", "b/u2"}
		f := newFlow(t, e, nil, keys...)
		synctest.Wait()
		var order []int
		for range keys {
			order = append(order, f.endOldest())
		}
		assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6}, order)
		f.finish(t, e)
	})
}

// At the global cap, under fair share, the choice goes top-down: tenant a,
// its tasks spread over ten users, holds no more of the cap than tenant b
// with one user. Chosen key by key, b would hold one permit of four.
func TestAtTheGlobalCapATenantsShareDoesNotGrowWithItsKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().Isolation(groupconc.IsolationFairShare).ParentSeparator("/").
			DefaultMaxConcurrencyPerGroup(10).GlobalMaxInFlight(4))
		var keys []string
		for i := range 10 {
			keys = append(keys, repeat(fmt.Sprint("a/u", i), 3)...)
		}
		f := newFlow(t, e, nil, append(keys, repeat("b/u", 30)...)...)
		synctest.Wait()
		for range 20 {
			f.endOldest()
		}
		tenants := map[string]int{}
		for key, n := range f.running() {
			tenants[key[:1]] += n
		}
		assert.Equal(t, map[string]int{"a": 2, "b": 2}, tenants)
		f.finish(t, e)
	})
}

// TestTasksWaitingAtTheGlobalCapStayInTheChoiceAsTheFirstChildJoins: under
// fair share the global line orders flat groups alone until a task of a
// group with a parent joins it. Then it chooses top-down, and the tasks
// already waiting must stand in that choice: being older, they go first.
func TestTasksWaitingAtTheGlobalCapStayInTheChoiceAsTheFirstChildJoins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newExecutor(t, builder().Isolation(groupconc.IsolationFairShare).ParentSeparator("/").
			GlobalMaxInFlight(1).DefaultMaxConcurrencyPerGroup(4))
		f := newFlow(t, e, nil, "x", "y", "z", "p/c")
		synctest.Wait()
		var order []string
		for range f.keys {
			order = append(order, f.keys[f.endOldest()])
		}
		assert.Equal(t, f.keys, order)
		quiesce(t, e, f.hs...)
	})
}
